import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { ADMISSION_CHANGED_BODY, Organization } from "./organization.js";

/**
 * An inbox. Deleting one marks it `deleting` (gone for reads at once) and a workflow purges its mail, then marks it
 * `deleted`. The row stays as a tombstone so its address is never handed to another owner.
 */
export const Inbox = defineEntity({
  name: "Inbox",
  tableName: "inboxes",
  properties: {
    id: p.string().length(28).primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    localPart: p.string().length(64),
    domain: p.string().length(253),
    /** The full address, lower-cased; unique across all organizations and all time. */
    address: p.string().length(320).unique(),
    /** managed or customer. */
    domainKind: p.string().length(20),
    domainId: p.uuid().nullable(),
    displayName: p.string().length(200),
    /** active, deleting or deleted. */
    status: p.string().length(20).default("active"),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
    deletedAt: p.datetime(3).nullable(),
  },
  indexes: [{ properties: ["organization", "createdAt", "id"] }],
  // Who may receive mail changed: smtp processes empty their admission caches (src/inbound/admission.ts).
  triggers: [{ name: "inboxes_admission_changed", timing: "after", events: ["insert", "update", "delete"], forEach: "statement", body: ADMISSION_CHANGED_BODY }],
});

export type InboxRow = InferEntity<typeof Inbox>;
