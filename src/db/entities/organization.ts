import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/**
 * Announces, when its transaction commits, that who may receive mail may have changed (an inbox or an
 * organization changed); smtp processes listening on the channel empty their admission caches.
 */
export const ADMISSION_CHANGED_BODY = "perform pg_notify('admission_changed', ''); return null;";

/** A tenant. Every other row belongs to exactly one organization. */
export const Organization = defineEntity({
  name: "Organization",
  tableName: "organizations",
  properties: {
    id: p.uuid().primary(),
    name: p.string().length(200),
    /** active or suspended; a suspended organization cannot use the API and receives no mail. */
    status: p.string().length(20).default("active"),
    messagesPerMinute: p.integer(),
    messagesPerDay: p.integer(),
    recipientsPerDay: p.integer(),
    /** Lifetime allowance of managed addresses. */
    managedLimit: p.integer(),
    /** Managed addresses ever created; never decreases (deleted inboxes keep counting). */
    managedUsed: p.integer().default(0),
    /** Which sends wait for a person's decision: none, first_contact, new_domain or all (a key's own holdFor wins). */
    holdFor: p.string().length(20).default("none"),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
  triggers: [{ name: "organizations_admission_changed", timing: "after", events: ["update", "delete"], forEach: "statement", body: ADMISSION_CHANGED_BODY }],
});

export type OrganizationRow = InferEntity<typeof Organization>;
