import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/**
 * A message exactly as an SMTP client delivered it, committed before the server answers 250. Processing turns it
 * into one stored Message per recipient inbox; until then it is `pending`, and a crash in between loses nothing.
 * Not tenant-owned: one transaction may carry mail for inboxes of several organizations.
 */
export const InboundRawMessage = defineEntity({
  name: "InboundRawMessage",
  tableName: "inbound_raw_messages",
  properties: {
    id: p.uuid().primary(),
    receivedAt: p.datetime(3),
    mailFrom: p.string().length(512),
    /** The envelope recipients that were admitted, lower-cased, one per inbox. */
    rcptTo: p.array().$type<string[]>(),
    /** The admitted inboxes, in rcptTo order. */
    inboxIds: p.array().$type<string[]>(),
    remoteIp: p.string().length(64),
    helo: p.string().length(512),
    tlsProtocol: p.string().length(64).nullable(),
    tlsCipher: p.string().length(128).nullable(),
    size: p.integer(),
    raw: p.blob().lazy(),
    /** pending, processed or failed (kept raw; see error). */
    status: p.string().length(20).default("pending"),
    attempts: p.integer().default(0),
    error: p.text().nullable(),
    processedAt: p.datetime(3).nullable(),
  },
  indexes: [{ properties: ["status", "receivedAt"] }],
});

export type InboundRawMessageRow = InferEntity<typeof InboundRawMessage>;
