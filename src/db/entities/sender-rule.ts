import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * Sender rules (src/senders/sender-rules.ts): whose mail an inbox takes. One row per inbox that has rules of its own,
 * and at most one with no inbox: the organization's default.
 */
export const SenderRule = defineEntity({
  name: "SenderRule",
  tableName: "sender_rules",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** The inbox the rules are of; null for the organization's default. */
    inboxId: p.string().length(28).nullable(),
    /** Addresses and domains, lower-cased, each once. */
    allow: p.array().$type<string[]>(),
    block: p.array().$type<string[]>(),
    requireAuthenticated: p.boolean(),
    updatedAt: p.datetime(3),
  },
  indexes: [
    // One row per inbox and one default per organization: the null inbox is one value here.
    {
      name: "sender_rules_scope_unique",
      expression: `create unique index "sender_rules_scope_unique" on "sender_rules" ("organization_id", "inbox_id") nulls not distinct`,
    },
  ],
});

export type SenderRuleRow = InferEntity<typeof SenderRule>;
