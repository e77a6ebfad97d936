// The `threads` table: its columns, the one rule its summary columns follow, and the statements that write them,
// for every path that adds a message to a thread: inbound processing (a batch at a time) and outbound acceptance
// (a send starts a thread, a reply joins one). Deleting a message recomputes its thread (src/mailbox/messages.ts).
//
// The rule, settled here once: a thread keeps its first message's subject; its participants are the addresses each
// message shows as stored, From (for inbound mail without a From header, the envelope sender the message is stored
// with), To and Cc, trimmed and lower-cased, each once in order of first appearance; it counts its messages; and its
// lastMessageAt never moves back. Until issue 20 the two paths had a rule each: inbound processing read From, To and
// Cc of the parsed headers (so a message without From added no sender although it showed one), outbound acceptance
// counted and merged in its own UPDATE.
import type { SqlTx } from "../database.js";
import { runValues, type Bind } from "../values.js";
import { insertAll, insertPart, type Columns, type InsertPart } from "./columns.js";

export interface ThreadSummary {
  readonly subject: string;
  /** Lower-cased addresses in order of first appearance. */
  readonly participants: readonly string[];
  readonly messageCount: number;
  readonly lastMessageAt: Date;
}

/** What a thread's summary takes of a message that joins it. */
export interface JoiningMessage {
  readonly subject: string;
  /** As stored: for inbound mail without a From header, the envelope sender (none for the null sender). */
  readonly from: { readonly email: string } | null;
  readonly to: readonly { readonly email: string }[];
  readonly cc: readonly { readonly email: string }[];
  readonly at: Date;
}

/** Participants after a message's From, To and Cc: trimmed, lower-cased, each once, earlier ones first. */
export function participantsWith(existing: readonly string[], message: Pick<JoiningMessage, "from" | "to" | "cc">): string[] {
  const merged = new Set(existing);
  for (const address of [message.from, ...message.to, ...message.cc]) {
    const normalized = address?.email.trim().toLowerCase();
    if (normalized) merged.add(normalized);
  }
  return [...merged];
}

/** The summary of a thread once a message joined it; null starts a new thread. */
export function summaryWith(thread: ThreadSummary | null, message: JoiningMessage): ThreadSummary {
  if (thread === null) {
    return { subject: message.subject, participants: participantsWith([], message), messageCount: 1, lastMessageAt: message.at };
  }
  return {
    subject: thread.subject,
    participants: participantsWith(thread.participants, message),
    messageCount: thread.messageCount + 1,
    lastMessageAt: message.at > thread.lastMessageAt ? message.at : thread.lastMessageAt,
  };
}

/** A thread as inserted: every column. */
export interface ThreadInsert extends ThreadSummary {
  readonly id: string;
  readonly organizationId: string;
  readonly inboxId: string;
  readonly createdAt: Date;
  /** When its latest message joined. */
  readonly updatedAt: Date;
  /** A thread of mail that sender rules refused (inbound processing starts it); false when omitted. */
  readonly blocked?: boolean;
}

const COLUMNS: Columns<ThreadInsert> = [
  ["id", (t) => t.id],
  ["organization_id", (t) => t.organizationId],
  ["inbox_id", (t) => t.inboxId],
  ["subject", (t) => t.subject],
  ["participants", (t) => [...t.participants]],
  ["message_count", (t) => t.messageCount],
  ["last_message_at", (t) => t.lastMessageAt],
  ["blocked", (t) => t.blocked ?? false],
  ["created_at", (t) => t.createdAt],
  ["updated_at", (t) => t.updatedAt],
];

/** A new thread of one message, summarised by the rule. */
export function newThread(ids: Pick<ThreadInsert, "id" | "organizationId" | "inboxId">, first: JoiningMessage): ThreadInsert {
  return { ...ids, ...summaryWith(null, first), createdAt: first.at, updatedAt: first.at };
}

/** Inserts the threads in one statement (more only past the parameter limit). */
export function insertThreads(tx: SqlTx, threads: readonly ThreadInsert[]): Promise<void> {
  return insertAll(tx, "threads", COLUMNS, threads);
}

/** The threads' INSERT as a part of a statement (insertTogether). */
export function threadsInsert(threads: readonly ThreadInsert[]): InsertPart[] {
  return insertPart("threads", COLUMNS, threads);
}

/** A stored thread's new summary (its subject never changes), for updateThreadSummaries. */
export interface ThreadSummaryUpdate extends ThreadSummary {
  readonly id: string;
  readonly organizationId: string;
  readonly updatedAt: Date;
}

/** The UPDATE of stored threads' summaries over a VALUES list of their rows. */
function summariesUpdate(values: string): string {
  return `update threads t set participants = v.participants, message_count = v.message_count, last_message_at = v.last_message_at,
            updated_at = v.updated_at
            from (values ${values}) as v(id, organization_id, participants, message_count, last_message_at, updated_at)
           where t.id = v.id and t.organization_id = v.organization_id`;
}

function summaryValues(t: ThreadSummaryUpdate, bind: Bind): string {
  return (
    `(${bind(t.id)}::text, ${bind(t.organizationId)}::uuid, ${bind([...t.participants])}::text[], ${bind(t.messageCount)}::int, ` +
    `${bind(t.lastMessageAt)}::timestamptz, ${bind(t.updatedAt)}::timestamptz)`
  );
}

/** Writes the summaries of stored threads in one statement (the caller holds their row locks). */
export function updateThreadSummaries(tx: SqlTx, threads: readonly ThreadSummaryUpdate[]): Promise<void> {
  return runValues(tx, summariesUpdate, threads, summaryValues);
}

/** The same UPDATE as a part of a statement (insertTogether), for summaries counted in dozens. */
export function threadSummariesUpdate(threads: readonly ThreadSummaryUpdate[]): InsertPart[] {
  if (threads.length === 0) return [];
  return [(bind) => summariesUpdate(threads.map((t) => summaryValues(t, bind)).join(", "))];
}

/** The summary columns of `threads` under an alias, as summaryOf reads them. */
export function summaryColumns(alias: string): string {
  return `${alias}.subject, ${alias}.participants, ${alias}.message_count, ${alias}.last_message_at`;
}

export interface ThreadSummaryRow {
  readonly subject: string;
  readonly participants: string[];
  readonly message_count: number;
  readonly last_message_at: Date;
}

export function summaryOf(row: ThreadSummaryRow): ThreadSummary {
  return { subject: row.subject, participants: row.participants, messageCount: row.message_count, lastMessageAt: row.last_message_at };
}

/** Locks a thread of the organization for a message to join it, and reads its summary; null when it is gone. */
export async function lockThreadSummary(tx: SqlTx, organizationId: string, threadId: string): Promise<ThreadSummary | null> {
  const [row] = await tx.query<ThreadSummaryRow>(
    `select ${summaryColumns("t")} from threads t where t.id = $1 and t.organization_id = $2 for update`,
    [threadId, organizationId],
  );
  return row ? summaryOf(row) : null;
}
