import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * A file kept to attach to sends (POST /v1/uploads, or the bytes fetched for a URL attachment), until `expiresAt`;
 * the expiry reconciler deletes it after. Only files the scanner found clean are kept. Its bytes are in
 * upload_chunks (src/db/tables/uploads.ts).
 */
export const Upload = defineEntity({
  name: "Upload",
  tableName: "uploads",
  properties: {
    /** upl_<24 hex>. */
    id: p.string().length(28).primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** The key that made it: a key restricted to inboxes sees and uses only its own uploads. */
    createdByKeyId: p.uuid(),
    /** upload (POST /v1/uploads) or url (fetched for a URL attachment). */
    source: p.string().length(10),
    /** The URL a `url` upload was fetched from. */
    sourceUrl: p.text().nullable(),
    /** Sanitised. */
    filename: p.string().length(255),
    contentType: p.string().length(255),
    size: p.integer(),
    /** 64 lowercase hex characters. */
    sha256: p.string().length(64),
    /** When the scanner found it clean (before it was kept). */
    scannedAt: p.datetime(3),
    createdAt: p.datetime(3),
    expiresAt: p.datetime(3),
  },
  indexes: [
    // The organization's storage in use (unexpired uploads), and the expiry reconciler's oldest first.
    { properties: ["organization", "expiresAt"] },
    { properties: ["expiresAt"] },
  ],
});

export type UploadRow = InferEntity<typeof Upload>;
