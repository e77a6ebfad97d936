import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * An attachment of an inbound message, stored under a generated id (att_<message hex>_<n>), never under the
 * sender's filename; the filename is sanitised display metadata. Bytes download only when the scan state is clean.
 */
export const Attachment = defineEntity({
  name: "Attachment",
  tableName: "attachments",
  properties: {
    id: p.string().length(40).primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    inboxId: p.string().length(28),
    messageId: p.string().length(28),
    /** 1-based position among the message's attachments. */
    position: p.integer(),
    filename: p.string().length(255),
    contentType: p.string().length(255),
    size: p.integer(),
    content: p.blob().lazy(),
    /** unscanned, clean, infected or error. */
    scanState: p.string().length(20).default("unscanned"),
    /** The scanner's finding (signature name, error), or null. */
    scanDetail: p.text().nullable(),
    scannedAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
  },
  indexes: [
    { properties: ["messageId"] },
    { properties: ["inboxId"] },
    // The scan reconciler looks for attachments left unscanned; the partial index stays as small as that backlog.
    {
      name: "attachments_unscanned_created_at_index",
      expression: `create index "attachments_unscanned_created_at_index" on "attachments" ("created_at") where "scan_state" = 'unscanned'`,
    },
  ],
});

export type AttachmentRow = InferEntity<typeof Attachment>;
