// The `messages` table's columns and row mapping, for every path that writes messages: outbound acceptance,
// inbound processing (which can insert its batches through insertMessages) and the test fixtures.
import type { Extracted } from "../../extraction/index.js";
import type { SqlTx } from "../database.js";
import type { MessageRow, StoredAddress, StoredInboundSecurity } from "../entities/message.js";
import { json, runPart, unnestInsert, type InsertPart, type TypedColumns } from "./columns.js";

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

const COLUMNS: TypedColumns<MessageInsert> = [
  ["id", "text", (m) => m.id],
  ["organization_id", "uuid", (m) => m.organizationId],
  ["inbox_id", "text", (m) => m.inboxId],
  ["thread_id", "text", (m) => m.threadId],
  ["direction", "text", (m) => m.direction],
  ["internet_message_id", "text", (m) => m.internetMessageId],
  ["in_reply_to", "text", (m) => m.inReplyTo],
  ["references", "text[]", (m) => m.references],
  ["from", "jsonb", (m) => json(m.from)],
  ["to", "jsonb", (m) => json(m.to)],
  ["cc", "jsonb", (m) => json(m.cc)],
  ["reply_to", "jsonb", (m) => json(m.replyTo)],
  ["subject", "text", (m) => m.subject],
  ["text", "text", (m) => m.text],
  ["html", "text", (m) => m.html],
  ["metadata", "jsonb", (m) => json(m.metadata)],
  ["delivery_status", "text", (m) => m.deliveryStatus],
  ["submission_id", "uuid", (m) => m.submissionId],
  ["failure_code", "text", (m) => m.failureCode],
  ["inbound_security", "jsonb", (m) => json(m.inboundSecurity)],
  ["attachments_scan_state", "text", (m) => m.attachmentsScanState],
  ["raw_id", "uuid", (m) => m.rawId],
  ["parse_problem", "text", (m) => m.parseProblem],
  ["extracted", "jsonb", (m) => json(m.extracted ?? null)],
  ["sender_authenticated", "boolean", (m) => m.senderAuthenticated ?? null],
  ["sender_blocked", "boolean", (m) => m.senderBlocked ?? false],
  ["created_at", "timestamptz", (m) => m.createdAt],
  ["updated_at", "timestamptz", (m) => m.updatedAt],
];

/** Inserts the messages in one statement. */
export function insertMessages(tx: SqlTx, messages: readonly MessageInsert[]): Promise<void> {
  const [part] = messagesInsert(messages);
  return part ? runPart(tx, part).then(() => undefined) : Promise.resolve();
}

/** The messages' INSERT as a part of a statement (insertTogether): one text whatever the number of messages. */
export function messagesInsert(messages: readonly MessageInsert[]): InsertPart[] {
  return messages.length === 0 ? [] : [unnestInsert("messages", COLUMNS, messages)];
}

/** An inserted message as the entity's row, which the API's mappers read (the organization as its id). */
export function messageRowOf(m: MessageInsert): MessageRow {
  const { organizationId, ...rest } = m;
  return { ...rest, references: [...m.references], to: [...m.to], cc: [...m.cc], metadata: { ...m.metadata }, organization: organizationId } as unknown as MessageRow;
}
