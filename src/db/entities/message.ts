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
  /** Sender authentication at receipt; absent when not evaluated (stored before it, or INBOUND_AUTHENTICATION=off). */
  authentication?: StoredAuthentication;
  /** What the sender rules decided at storing; absent on messages stored before sender rules. */
  senderRule?: SenderRuleOutcome;
}

/** allowed (matched an allow entry), blocked (a rule refused it) or none. */
export type SenderRuleOutcome = "allowed" | "blocked" | "none";

/** What sender authentication found (src/authentication), as stored: its result words and what they prove. */
export interface StoredAuthentication {
  spf: string;
  dkim: string;
  dmarc: string;
  arc: string;
  fromDomain: string | null;
  senderAuthenticated: boolean;
  dkimDomains: string[];
  dmarcPolicy: string | null;
  replyToDiverges: boolean;
}

/**
 * What extraction read out of an inbound message, as the messages table keeps it: `replyText` and `safeText` are null
 * when they equal the row's text trimmed, as most plain-text mail's do, so such a body is stored once, not three
 * times (src/db/tables/messages.ts storedExtracted, extractedOf). Rows stored before this hold both texts in full;
 * rows stored before the safety analysis have no safeText.
 */
export type StoredExtracted = Omit<Extracted, "replyText" | "safeText"> & { readonly replyText: string | null; readonly safeText?: string | null };

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
    extracted: p.json<StoredExtracted>().nullable(),
    /**
     * Whether the sender of an inbound message authenticated (DMARC pass), as inboundSecurity.authentication says,
     * kept apart for the senderAuthenticated filters; null when not evaluated (stored before it, switched off, outbound).
     */
    senderAuthenticated: p.boolean().nullable(),
    /** A sender rule refused the inbound message: stored, but left out of lists, waits and events (src/senders). */
    senderBlocked: p.boolean().default(false),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
  indexes: [
    { properties: ["threadId", "createdAt", "id"] },
    { properties: ["inboxId", "createdAt", "id"] },
    { properties: ["inboxId", "internetMessageId"] },
    // The senderAuthenticated filters: an inbox's messages in list order, and a thread's, of authenticated senders.
    {
      name: "messages_authenticated_inbox_index",
      expression: `create index "messages_authenticated_inbox_index" on "messages" ("inbox_id", "created_at", "id") where "sender_authenticated"`,
    },
    {
      name: "messages_authenticated_thread_index",
      expression: `create index "messages_authenticated_thread_index" on "messages" ("thread_id") where "sender_authenticated"`,
    },
  ],
  uniques: [{ properties: ["rawId", "inboxId"] }],
});

export type MessageRow = InferEntity<typeof Message>;
