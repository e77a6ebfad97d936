// The `messages` table's columns and row mapping, for every path that writes messages: outbound acceptance,
// inbound processing (which can insert its batches through insertMessages) and the test fixtures.
import type { Extracted } from "../../extraction/index.js";
import type { SqlTx } from "../database.js";
import type { MessageRow, StoredAddress, StoredExtracted, StoredInboundSecurity } from "../entities/message.js";
import { insertAll, insertPart, json, type Columns, type InsertPart } from "./columns.js";

/** A message as inserted: every column. */
export interface MessageInsert {
  readonly id: string;
  readonly organizationId: string;
  readonly inboxId: string;
  readonly threadId: string;
  readonly direction: "inbound" | "outbound";
  readonly internetMessageId: string;
  readonly inReplyTo: string | null;
  readonly references: readonly string[];
  readonly from: StoredAddress;
  readonly to: readonly StoredAddress[];
  /** Cc as sent or received; never Bcc, which only the submission's recipients name. */
  readonly cc: readonly StoredAddress[];
  readonly replyTo: StoredAddress | null;
  readonly subject: string;
  readonly text: string;
  readonly html: string | null;
  readonly metadata: Readonly<Record<string, unknown>>;
  /** received (inbound); submitted (outbound), then its submission's aggregate. */
  readonly deliveryStatus: string;
  readonly submissionId: string | null;
  readonly failureCode: string | null;
  readonly inboundSecurity: StoredInboundSecurity | null;
  readonly attachmentsScanState: string | null;
  readonly rawId: string | null;
  readonly parseProblem: string | null;
  /** What extraction read out of an inbound message (src/extraction); null when not computed, absent outbound. */
  readonly extracted?: Extracted | null;
  /** Inbound: whether the sender authenticated (DMARC), for the filters; null when not evaluated, and outbound. */
  readonly senderAuthenticated?: boolean | null;
  /** Inbound: a sender rule refused it (stored, left out of lists, waits and events); false outbound. */
  readonly senderBlocked?: boolean;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

const COLUMNS: Columns<MessageInsert> = [
  ["id", (m) => m.id],
  ["organization_id", (m) => m.organizationId],
  ["inbox_id", (m) => m.inboxId],
  ["thread_id", (m) => m.threadId],
  ["direction", (m) => m.direction],
  ["internet_message_id", (m) => m.internetMessageId],
  ["in_reply_to", (m) => m.inReplyTo],
  ["references", (m) => [...m.references]],
  ["from", (m) => json(m.from)],
  ["to", (m) => json(m.to)],
  ["cc", (m) => json(m.cc)],
  ["reply_to", (m) => json(m.replyTo)],
  ["subject", (m) => m.subject],
  ["text", (m) => m.text],
  ["html", (m) => m.html],
  ["metadata", (m) => json(m.metadata)],
  ["delivery_status", (m) => m.deliveryStatus],
  ["submission_id", (m) => m.submissionId],
  ["failure_code", (m) => m.failureCode],
  ["inbound_security", (m) => json(m.inboundSecurity)],
  ["attachments_scan_state", (m) => m.attachmentsScanState],
  ["raw_id", (m) => m.rawId],
  ["parse_problem", (m) => m.parseProblem],
  ["extracted", (m) => json(m.extracted ? storedExtracted(m.extracted, m.text) : null)],
  ["sender_authenticated", (m) => m.senderAuthenticated ?? null],
  ["sender_blocked", (m) => m.senderBlocked ?? false],
  ["created_at", (m) => m.createdAt],
  ["updated_at", (m) => m.updatedAt],
];

/** With the u flag a surrogate pair is one character: this matches only a surrogate standing alone. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * An extraction as a row keeps it: its reply and safe texts null when they equal the row's text trimmed (what the
 * parser threads leave out for the same reason, src/mail/parse.ts TrimmedText); extractedOf puts them back. Only a
 * well-formed text comes back from PostgreSQL exactly as it went in (a lone surrogate is sent as U+FFFD), so only
 * such a text stands for them.
 */
export function storedExtracted(extracted: Extracted, text: string): StoredExtracted {
  if (LONE_SURROGATE.test(text)) return extracted;
  const trimmed = text.trim();
  if (extracted.replyText !== trimmed && extracted.safeText !== trimmed) return extracted;
  return { ...extracted, replyText: extracted.replyText === trimmed ? null : extracted.replyText, safeText: extracted.safeText === trimmed ? null : extracted.safeText };
}

/** A row's extraction as it was made (storedExtracted): its texts left out are the row's text trimmed. */
export function extractedOf(stored: StoredExtracted, text: string): Extracted {
  const { replyText, safeText } = stored;
  if (replyText !== null && safeText !== null) return stored as Extracted;
  const trimmed = text.trim();
  return { ...stored, replyText: replyText ?? trimmed, safeText: safeText === null ? trimmed : safeText } as Extracted;
}

/** Inserts the messages in one statement (more only past the parameter limit). */
export function insertMessages(tx: SqlTx, messages: readonly MessageInsert[]): Promise<void> {
  return insertAll(tx, "messages", COLUMNS, messages);
}

/** The messages' INSERT as a part of a statement (insertTogether). */
export function messagesInsert(messages: readonly MessageInsert[]): InsertPart[] {
  return insertPart("messages", COLUMNS, messages);
}

/** An inserted message as the entity's row, which the API's mappers read (the organization as its id). */
export function messageRowOf(m: MessageInsert): MessageRow {
  const { organizationId, ...rest } = m;
  return { ...rest, references: [...m.references], to: [...m.to], cc: [...m.cc], metadata: { ...m.metadata }, organization: organizationId } as unknown as MessageRow;
}
