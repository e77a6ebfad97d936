import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import type { Extracted } from "../../extraction/index.js";
import { Organization } from "./organization.js";

export interface StoredAddress {
  email: string;
  name?: string;
}

/** What is known about the SMTP session an inbound message came in (spec: inboundSecurity). */
export interface StoredInboundSecurity {
  remoteIp: string;
  helo: string;
  tls: { encrypted: boolean; protocol: string | null; cipher: string | null };
}

/** A stored message of a mailbox, inbound or outbound. */
export const Message = defineEntity({
  name: "Message",
  tableName: "messages",
  properties: {
    id: p.string().length(28).primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    inboxId: p.string().length(28),
    threadId: p.string().length(28),
    /** inbound or outbound. */
    direction: p.string().length(10),
    internetMessageId: p.string().length(998),
    inReplyTo: p.string().length(998).nullable(),
    references: p.array().$type<string[]>(),
    from: p.json<StoredAddress>(),
    to: p.json<StoredAddress[]>(),
    /** Cc recipients as sent or received (empty for messages stored before Cc was kept); never Bcc. */
    cc: p.json<StoredAddress[]>().defaultRaw("'[]'"),
    replyTo: p.json<StoredAddress>().nullable(),
    subject: p.text(),
    text: p.text(),
    html: p.text().nullable(),
    metadata: p.json<Record<string, unknown>>(),
    /** received (inbound) or submitted (outbound). */
    deliveryStatus: p.string().length(20),
    submissionId: p.uuid().nullable(),
    failureCode: p.string().length(64).nullable(),
    inboundSecurity: p.json<StoredInboundSecurity>().nullable(),
    /** unscanned, clean, infected or error: the attachments taken together (worst state wins). */
    attachmentsScanState: p.string().length(20).nullable(),
    /** The raw message this was parsed from (inbound). */
    rawId: p.uuid().nullable(),
    /** Why parsing stopped early (budget exceeded, malformed MIME): the body is partial, the raw is kept. */
    parseProblem: p.text().nullable(),
    /** Reply text, codes and links read out of an inbound message when it was stored; null when not computed. */
    extracted: p.json<Extracted>().nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
  indexes: [
    { properties: ["threadId", "createdAt", "id"] },
    { properties: ["inboxId", "createdAt", "id"] },
    { properties: ["inboxId", "internetMessageId"] },
  ],
  uniques: [{ properties: ["rawId", "inboxId"] }],
});

export type MessageRow = InferEntity<typeof Message>;
