// The inbound store: what storing parsed raw messages writes. One transaction stores a batch (the second and last
// commit of each message): it claims the raw rows still pending, records reports to the feedback address, stores
// one Message per admitted inbox that is still active (its thread, its attachments, its sender as the inbox's
// contact, its message.received event in the event log and the webhook outbox), then deletes the raw rows — or keeps
// a partially parsed one as `failed`.
// After the commit, webhook deliveries are dispatched and attachment scans started. When and how many messages a
// batch holds is the pipeline's business (pipeline.ts); processor.ts puts the two together.
//
// The transaction claims the rows with FOR UPDATE SKIP LOCKED and stores only what is still pending, so a message is
// stored once even when the sweeper of another process parses it too; a crash rolls back and leaves it pending. Its
// statements are the same five whatever the batch's size (BEGIN; one read of raw rows, inboxes, sender rules and
// webhook endpoints; the thread lookup when a message answers one; one write of threads, messages, contacts and raw
// rows; the attachments when there are any; the event log's append with the webhook outbox's rows; COMMIT), in plain
// SQL on the driver's pool, not the ORM: this is the hot path of inbound mail, and a batch of one 10 KB message costs
// PostgreSQL ~2 ms of CPU and this thread ~1.5 ms, most of it per statement and per commit, not per row
// (bench:inbound-store).
import type { MessageSource } from "../authentication/message-source.js";
import type { SenderAuthentication, SenderAuthenticator } from "../authentication/sender-authentication.js";
import type { Database, SqlTx } from "../db/database.js";
import type { SenderRuleOutcome, StoredAuthentication } from "../db/entities/message.js";
import { insertAttachments, type AttachmentInsert } from "../db/tables/attachments.js";
import { insertTogether, runPart, type InsertPart } from "../db/tables/columns.js";
import { contactsInsert, insertContacts, type ContactInsert } from "../db/tables/contacts.js";
import { insertMessages, messagesInsert, type MessageInsert } from "../db/tables/messages.js";
import { inboxRules, inboxRulesSelect, type InboxRulesRow, type StoredSenderRules } from "../db/tables/sender-rules.js";
import {
  insertThreads,
  summaryColumns,
  summaryOf,
  summaryWith,
  threadsInsert,
  threadSummariesUpdate,
  updateThreadSummaries,
  type JoiningMessage,
  type ThreadInsert,
  type ThreadSummary,
  type ThreadSummaryUpdate,
  type ThreadSummaryRow,
} from "../db/tables/threads.js";
import { appendEvents } from "../events/log.js";
import { messageReceivedEvents } from "../events/message-received.js";
import { ACTIVE_ENDPOINT_COLUMNS, activeEndpointsSelect, type ActiveEndpoint } from "../db/tables/webhook-endpoints.js";
import { newId } from "../ids.js";
import { contactsOf } from "../mailbox/contacts.js";
import type { Logger } from "../logger.js";
import type { EmailParser, ParsedAddress, ParsedEmail, RawInput } from "../mail/parse.js";
import { judgeSender, senderOf } from "../senders/sender-rules.js";
import { attachmentId, MAX_ATTACHMENTS, sanitizeFilename } from "./attachments.js";
import type { AttachmentScanStarter, MessageReceivedEvent, MessageReceivedOutbox } from "./ports.js";
import { rawChunks, readChunks, type ReceivedMessage } from "./receive.js";
import { parentMessageIds } from "./threading.js";

export interface FeedbackReports {
  readonly address: string;
  /** Authenticates the report before the store transaction (DNS lookups); what it returns records it inside. */
  check(raw: RawRow, rawId: string): Promise<CheckedFeedback>;
}

export interface CheckedFeedback {
  record(tx: SqlTx): Promise<void>;
}

export interface InboundStoreDeps {
  readonly db: Database;
  readonly parser: EmailParser;
  readonly outbox: MessageReceivedOutbox;
  readonly scans: AttachmentScanStarter;
  readonly log: Logger;
  /** Right-hand side of the Message-ID given to a message that came without one. */
  readonly hostname: string;
  /** Mail to the feedback address: ARF reports, recorded as complaints instead of stored (src/outbound/feedback-reports.ts). */
  readonly feedbackReports?: FeedbackReports | undefined;
  /** SPF, DKIM, DMARC and ARC of each message for inboxes; absent with INBOUND_AUTHENTICATION=off (not evaluated). */
  readonly authenticator?: SenderAuthenticator | undefined;
  readonly clock: StoreClock;
}

/** A raw message's envelope and session as committed by the SMTP side (inbound_raw_messages): what storing needs. */
export interface RawEnvelopeRow {
  readonly rcpt_to: string[];
  readonly inbox_ids: string[];
  readonly mail_from: string;
  readonly remote_ip: string;
  readonly helo: string;
  readonly tls_protocol: string | null;
  readonly tls_cipher: string | null;
}

/** A raw message with its bytes whole. */
export interface RawRow extends RawEnvelopeRow {
  readonly raw: Buffer;
}

export function rawRowOf(m: ReceivedMessage): RawRow {
  return {
    raw: m.raw,
    rcpt_to: m.recipients.map((r) => r.address),
    inbox_ids: m.recipients.map((r) => r.inboxId),
    mail_from: m.mailFrom,
    remote_ip: m.session.remoteIp,
    helo: m.session.helo,
    tls_protocol: m.session.tls?.protocol ?? null,
    tls_cipher: m.session.tls?.cipher ?? null,
  };
}

/** A raw message parsed and ready to be stored; its bytes are not kept. */
export interface ParsedRaw {
  readonly rawId: string;
  readonly raw: RawEnvelopeRow;
  /** Null when the message goes to the feedback address only (there is no inbox to store it in). */
  readonly email: ParsedEmail | null;
  readonly feedback: CheckedFeedback | undefined;
  /** Who sent it, as far as authentication can tell; null when not evaluated (switched off, or no inbox copy). */
  readonly authentication: SenderAuthentication | null;
  /** What it adds to a batch's statements: its size once per inbox copy. */
  readonly bytes: number;
  /** What it holds in memory until it is stored: what the parse yielded, and its copies in the store's statements. */
  readonly held: number;
}

/**
 * The time of each stored message: at least a millisecond after the previous message this process stored, since ids
 * are random and equal times would list a batch (a parent and its reply included) in any order.
 */
export class StoreClock {
  private last = 0;

  next(now: Date): Date {
    this.last = Math.max(now.getTime(), this.last + 1);
    return new Date(this.last);
  }
}

interface StoredInboundMessage extends MessageReceivedEvent {
  readonly attachmentCount: number;
  readonly senderAuthenticated: boolean;
  readonly blocked: boolean;
}

interface InboxRef {
  readonly id: string;
  readonly organization_id: string;
  readonly address: string;
}

/** One inbox's copy of a parsed message, as it is about to be stored. */
interface Copy {
  readonly message: ParsedRaw;
  readonly email: ParsedEmail;
  readonly inbox: InboxRef;
  readonly id: string;
  readonly internetMessageId: string;
  /** From as stored: the envelope sender when the message has no From header. */
  readonly from: ParsedAddress;
  /** What the inbox's sender rules (else its organization's) decided, with the rules committed now. */
  readonly senderRule: SenderRuleOutcome;
  readonly at: Date;
}

/**
 * The claim, the thread lookup and the event log's append have one text whatever the batch (their values bound as
 * arrays, rows found by key): prepared and planned once per connection, their planning (about half of PostgreSQL's
 * time for them in batches of one, bench:inbound-store) is not paid again per batch.
 */
const PREPARED = { prepared: true } as const;
const GENERIC_PLANS = { genericPlans: true } as const;

/** Failed attempts (errors, not parse problems) after which a raw message is marked failed and left alone. */
const MAX_ATTEMPTS = 5;

/**
 * The raw message parsed (from the bytes known, else from its row, or streamed from its chunks when it was
 * committed in chunks), its sender authenticated first (at most INBOUND_AUTHENTICATION_TIMEOUT_MS: the safety analysis
 * of the parse reads the verdict, and no parser worker waits on the sender's DNS meanwhile), its feedback report
 * checked; null when it is no longer pending (done, or being processed by another process).
 */
export async function prepareRaw(deps: InboundStoreDeps, rawId: string, known: RawRow | undefined): Promise<ParsedRaw | null> {
  const pending = known ? pendingOf(known) : await readPending(deps.db, rawId);
  if (!pending) return null;
  const { envelope, size } = pending;
  // A message committed in chunks is read as a stream, afresh by each reader (the parse, the authentication).
  const chunks = () => rawChunks(deps.db.sql, rawId, size);
  const { feedbackReports } = deps;
  const feedback =
    feedbackReports && envelope.rcpt_to.includes(feedbackReports.address)
      ? await feedbackReports.check({ ...envelope, raw: pending.raw ?? (await readChunks(deps.db.sql, rawId, size)) }, rawId)
      : undefined;
  const copies = Math.max(1, envelope.inbox_ids.length);
  // A report to the feedback address alone is not stored in an inbox: its own check authenticates it.
  if (envelope.inbox_ids.length <= (feedback ? 1 : 0)) return { rawId, raw: envelope, email: null, feedback, authentication: null, bytes: size * copies, held: 0 };
  const authentication = await authenticate(deps, rawId, envelope, pending.raw ?? chunks());
  const raw: RawInput = pending.raw ?? { chunks };
  const email = await deps.parser.parse(raw, { authentication: forExtraction(authentication) });
  // What the parse yielded is held until it is stored, and copied into the statements that store it, once per inbox.
  return { rawId, raw: envelope, email, feedback, authentication, bytes: size * copies, held: parsedBytes(email) * (1 + copies) };
}

/** The sender authentication of a message, once for all its inbox copies; null when switched off. Never rejects. */
async function authenticate(deps: InboundStoreDeps, rawId: string, envelope: RawEnvelopeRow, source: MessageSource): Promise<SenderAuthentication | null> {
  if (!deps.authenticator) return null;
  const result = await deps.authenticator.evaluate(source, { remoteIp: envelope.remote_ip, helo: envelope.helo, mailFrom: envelope.mail_from });
  deps.log.debug("sender authentication", { rawId, result: result.summary });
  return result;
}

/** What the safety analysis takes of the verdict (null: not evaluated, no sender warnings). */
function forExtraction(a: SenderAuthentication | null) {
  return a && { evaluated: true, senderAuthenticated: a.senderAuthenticated, replyToDiverges: a.replyToDiverges };
}

function pendingOf({ raw, ...envelope }: RawRow): { envelope: RawEnvelopeRow; raw: Buffer; size: number } {
  return { envelope, raw, size: raw.byteLength };
}

/** The memory a parsed message takes: its text and HTML (two bytes a character at most) and its attachments. */
function parsedBytes(email: ParsedEmail): number {
  return 2 * (email.text.length + (email.html?.length ?? 0)) + email.attachments.reduce((n, a) => n + a.content.byteLength, 0);
}

/** A pending raw message's envelope, and its bytes when they are in its row (else they are in chunks). */
async function readPending(db: Database, rawId: string): Promise<{ envelope: RawEnvelopeRow; raw: Buffer | null; size: number } | null> {
  // The bytes only when the row holds them: a message committed in chunks has an empty `raw`.
  const [row] = await db.sql.query<RawEnvelopeRow & { size: number; raw: Buffer | null }>(
    `select case when length(raw) = size then raw end as raw, size, rcpt_to, inbox_ids, mail_from, remote_ip, helo, tls_protocol, tls_cipher
       from inbound_raw_messages where id = $1 and status = 'pending'`,
    [rawId],
  );
  if (!row) return null;
  const { raw, size, ...envelope } = row;
  return { envelope, raw, size };
}

/** Stores the batch (in the order given) in one transaction, then dispatches its webhooks and starts its scans. */
export async function storeBatch(deps: InboundStoreDeps, batch: readonly ParsedRaw[]): Promise<void> {
  const committed = await deps.db.sql.transaction((tx) => storeIn(deps, tx, batch), GENERIC_PLANS);
  deps.outbox.dispatch(committed.enqueued);
  for (const message of committed.stored.filter((m) => m.attachmentCount > 0)) {
    // The scanning side retries unscanned attachments durably; a failed start here only delays the scan.
    deps.scans
      .start(message)
      .catch((error: unknown) => deps.log.warn("attachment scan start failed", { messageId: message.messageId, error }));
  }
}

/** Stores the batch's messages that are still pending; the others are done or in another process's hands. */
async function storeIn(deps: InboundStoreDeps, tx: SqlTx, batch: readonly ParsedRaw[]): Promise<{ stored: StoredInboundMessage[]; enqueued: unknown[] }> {
  const { claimed, inboxes, rules, endpoints } = await claimBatch(tx, batch);
  if (claimed.length === 0) return { stored: [], enqueued: [] };
  const now = new Date();
  for (const message of claimed) {
    // A report to the feedback address is recorded in this transaction (so once) and never stored in an inbox.
    if (message.feedback) await message.feedback.record(tx);
  }
  const copies = copiesOf(deps, claimed, inboxes, rules, now);
  const { threadIds, threads, summaries } = await threadsFor(tx, copies);
  await writeRows(tx, {
    threads,
    summaries,
    messages: copies.map((copy, i) => messageOf(copy, threadIds[i]!)),
    contacts: copies.flatMap((copy) => contactsOf(copy.inbox.organization_id, copy.inbox.address, [copy.from.email], copy.at)),
    raw: finishRaw(deps.log, claimed, now),
  });
  await insertAttachments(tx, attachmentsOf(copies));
  const stored = copies.map((c, i) => ({
    messageId: c.id,
    organizationId: c.inbox.organization_id,
    inboxId: c.inbox.id,
    threadId: threadIds[i]!,
    attachmentCount: Math.min(c.email.attachments.length, MAX_ATTACHMENTS),
    senderAuthenticated: c.message.authentication?.senderAuthenticated ?? false,
    blocked: c.senderRule === "blocked",
  }));
  // Mail a sender rule refused is stored, and announced nowhere: no webhook, no wait or stream woken.
  const events = messageReceivedEvents(
    stored.filter((m) => !m.blocked),
    now,
  );
  const deliveries = deps.outbox.plan(events, endpoints);
  // Last, with the outbox rows: it holds the organizations' event-log turns until the commit.
  await appendEvents(tx, events, deliveries.rows);
  return { stored, enqueued: deliveries.enqueued };
}

/** What a batch's transaction reads before it writes. */
interface Claim {
  /** The batch's messages still pending, their raw rows locked FOR UPDATE (SKIP LOCKED: others are in other hands). */
  readonly claimed: ParsedRaw[];
  /** The admitted inboxes of its parsed messages that are still active, locked FOR SHARE. */
  readonly inboxes: InboxRef[];
  /** The sender rules that apply to them, as committed now. */
  readonly rules: Map<string, StoredSenderRules>;
  /** The active webhook endpoints of their organizations, locked FOR SHARE (the outbox's rows are made for them). */
  readonly endpoints: ActiveEndpoint[];
}

/**
 * Claims the batch's raw rows, locks its inboxes, reads their sender rules and their organizations' webhook
 * endpoints, in one statement (a round trip each cost more than the reading itself). FOR SHARE on the inboxes: an
 * inbox delete (status → deleting, then the purge) waits for this commit, so the purge cannot miss a message stored
 * here, and a message never lands in an inbox already being purged. The locks are taken in this order, the raw rows
 * first, the inboxes in id order, then the endpoints in id order (webhook-endpoints.ts says why they are locked).
 */
async function claimBatch(tx: SqlTx, batch: readonly ParsedRaw[]): Promise<Claim> {
  const inboxIds = [...new Set(batch.filter((m) => m.email !== null).flatMap((m) => m.raw.inbox_ids))];
  const rules = inboxRulesSelect("active");
  const ruleColumns = rules.columns.filter(([name]) => name !== "organization_id");
  // One row shape for the three kinds: each kind's own columns, nulls of the right types for the others'.
  const nulls = (columns: readonly (readonly [string, string])[]) => columns.map(([name, type]) => `null::${type} as ${name}`).join(", ");
  const names = (columns: readonly (readonly [string, string])[]) => columns.map(([name]) => name).join(", ");
  const rows = await tx.query<
    { kind: "raw" | "inbox" | "rule" | "endpoint"; raw_id: string | null; id: string | null; address: string | null } & InboxRulesRow &
      Omit<ActiveEndpoint, "id" | "organization_id">
  >(
    `with claimed as (select id from inbound_raw_messages where id = any($1::uuid[]) and status = 'pending' for update skip locked),
          active as (select id, organization_id, address from inboxes where id = any($2::text[]) and status = 'active' order by id for share),
          rules as (${rules.select}),
          endpoints as (${activeEndpointsSelect("in (select organization_id from active)")})
     select 'raw' as kind, id as raw_id, null::text as id, null::uuid as organization_id, null::text as address,
            ${nulls(ruleColumns)}, ${nulls(ACTIVE_ENDPOINT_COLUMNS)}
       from claimed
     union all
     select 'inbox', null, id, organization_id, address, ${nulls(ruleColumns)}, ${nulls(ACTIVE_ENDPOINT_COLUMNS)} from active
     union all
     select 'rule', null, null, organization_id, null, ${names(ruleColumns)}, ${nulls(ACTIVE_ENDPOINT_COLUMNS)} from rules
     union all
     select 'endpoint', null, id, organization_id, null, ${nulls(ruleColumns)}, ${names(ACTIVE_ENDPOINT_COLUMNS)} from endpoints`,
    [batch.map((m) => m.rawId), inboxIds],
    PREPARED,
  );
  const claimedIds = new Set(rows.filter((r) => r.kind === "raw").map((r) => r.raw_id!));
  const inboxes = rows.filter((r) => r.kind === "inbox").map((r) => ({ id: r.id!, organization_id: r.organization_id, address: r.address! }));
  return {
    claimed: batch.filter((m) => claimedIds.has(m.rawId)),
    inboxes,
    rules: inboxRules(
      inboxes,
      rows.filter((r) => r.kind === "rule"),
    ),
    endpoints: rows
      .filter((r) => r.kind === "endpoint")
      .map((r) => ({ id: r.id!, organization_id: r.organization_id, url: r.url, signing_secret: r.signing_secret, events: r.events })),
  };
}

/**
 * One copy per parsed message and admitted inbox that is still active, judged by the sender rules that apply to its
 * inbox.
 */
function copiesOf(deps: InboundStoreDeps, claimed: readonly ParsedRaw[], inboxes: readonly InboxRef[], rules: Map<string, StoredSenderRules>, now: Date): Copy[] {
  const parsed = claimed.filter((m) => m.email !== null);
  return parsed.flatMap((message): Copy[] => {
    const email = message.email!;
    // RFC 5321 lets the receiving server supply a missing Message-ID; one per raw message, so every inbox's copy
    // carries the same.
    const internetMessageId = email.messageId ?? `<${message.rawId}@${deps.hostname}>`;
    const from = email.from ?? { email: message.raw.mail_from };
    const sender = senderOf(from.email, message.authentication);
    const at = deps.clock.next(now);
    return inboxes
      .filter((inbox) => message.raw.inbox_ids.includes(inbox.id))
      .map((inbox) => ({ message, email, inbox, id: newId("msg"), internetMessageId, from, senderRule: judgeSender(rules.get(inbox.id), sender), at }));
  });
}

/** A thread the batch adds messages to: one already stored (locked), or one the batch starts. */
interface ThreadChange {
  readonly id: string;
  readonly inbox: InboxRef;
  readonly isNew: boolean;
  /** A thread of blocked mail (see threadsFor). */
  readonly blocked: boolean;
  /** For a new thread, when its first message came. */
  readonly createdAt: Date;
  summary: ThreadSummary;
  /** When the batch's last message joined it. */
  updatedAt: Date;
}

/**
 * The thread of each copy, in copy order: the thread of the newest message of its inbox it answers, else a new
 * one. Messages of the batch are newer than any stored one, so an earlier copy of the batch is looked for first,
 * then the database; the summaries of the threads touched are folded over the batch's messages in order and
 * written (existing threads locked FOR UPDATE by the lookup). Mail a sender rule blocked joins only threads of
 * blocked mail, and other mail only threads that are not: a thread is left out of lists whole or not at all, and
 * blocked mail never changes the summary of one that is listed.
 */
async function threadsFor(
  tx: SqlTx,
  copies: readonly Copy[],
): Promise<{ threadIds: string[]; threads: ThreadInsert[]; summaries: ThreadSummaryUpdate[] }> {
  const inBatchParent = parentsInBatch(copies);
  const storedThreadOf = await lockStoredThreads(tx, copies, inBatchParent);
  const changes = new Map<string, ThreadChange>();
  const threadIds: string[] = [];
  for (const [i, copy] of copies.entries()) {
    const parent = inBatchParent[i];
    const row = storedThreadOf.get(i);
    const change = changes.get(parent !== undefined ? threadIds[parent]! : (row?.id ?? ""));
    if (change) {
      change.summary = summaryWith(change.summary, joining(copy));
      change.updatedAt = copy.at;
      threadIds.push(change.id);
      continue;
    }
    const id = row?.id ?? newId("thr");
    const summary = summaryWith(row ? summaryOf(row) : null, joining(copy));
    changes.set(id, { id, inbox: copy.inbox, isNew: !row, blocked: isBlocked(copy), createdAt: copy.at, summary, updatedAt: copy.at });
    threadIds.push(id);
  }
  const all = [...changes.values()];
  return {
    threadIds,
    threads: all
      .filter((t) => t.isNew)
      .map((t) => ({ id: t.id, organizationId: t.inbox.organization_id, inboxId: t.inbox.id, ...t.summary, blocked: t.blocked, createdAt: t.createdAt, updatedAt: t.updatedAt })),
    summaries: all.filter((t) => !t.isNew).map((t) => ({ id: t.id, organizationId: t.inbox.organization_id, ...t.summary, updatedAt: t.updatedAt })),
  };
}

function isBlocked(copy: Copy): boolean {
  return copy.senderRule === "blocked";
}

/**
 * For each copy, the index of the newest earlier copy of the batch in its inbox that it answers, if any (blocked
 * mail answering blocked mail, other mail other mail).
 */
function parentsInBatch(copies: readonly Copy[]): (number | undefined)[] {
  const inBatchParent: (number | undefined)[] = [];
  const latestInBatch = new Map<string, number>();
  const key = (copy: Copy, internetMessageId: string) => `${copy.inbox.id} ${isBlocked(copy)} ${internetMessageId}`;
  for (const [i, copy] of copies.entries()) {
    const parents = parentMessageIds(copy.email).map((id) => latestInBatch.get(key(copy, id)) ?? -1);
    const newest = Math.max(-1, ...parents);
    inBatchParent.push(newest >= 0 ? newest : undefined);
    latestInBatch.set(key(copy, copy.internetMessageId), i);
  }
  return inBatchParent;
}

/** The stored threads the copies without a parent in the batch answer, by copy index, locked FOR UPDATE. */
async function lockStoredThreads(
  tx: SqlTx,
  copies: readonly Copy[],
  inBatchParent: readonly (number | undefined)[],
): Promise<Map<number, ThreadSummaryRow & { copy: number; id: string }>> {
  const lookups = copies.flatMap((copy, i) =>
    inBatchParent[i] === undefined
      ? parentMessageIds(copy.email).map((parent) => ({ copy: i, inboxId: copy.inbox.id, parent, blocked: isBlocked(copy) }))
      : [],
  );
  if (lookups.length === 0) return new Map();
  // One lookup for the whole batch; the threads are locked in id order, so batches that share threads never
  // wait on each other in a circle.
  const found = await tx.query<ThreadSummaryRow & { copy: number; id: string }>(
    `with parent as (
       select distinct on (w.copy) w.copy, m.thread_id
         from unnest($1::int[], $2::text[], $3::text[], $4::bool[]) as w(copy, inbox_id, internet_message_id, blocked)
         join messages m on m.inbox_id = w.inbox_id and m.internet_message_id = w.internet_message_id
         join threads pt on pt.id = m.thread_id and pt.blocked = w.blocked
        order by w.copy, m.created_at desc, m.id desc)
     select p.copy, t.id, ${summaryColumns("t")}
       from parent p join threads t on t.id = p.thread_id
      order by t.id
        for update of t`,
    [lookups.map((l) => l.copy), lookups.map((l) => l.inboxId), lookups.map((l) => l.parent), lookups.map((l) => l.blocked)],
    PREPARED,
  );
  return new Map(found.map((row) => [row.copy, row]));
}

/** What a copy adds to its thread's summary: the addresses it is stored with. */
function joining(copy: Copy): JoiningMessage {
  return { subject: copy.email.subject, from: copy.from, to: copy.email.to, cc: copy.email.cc, at: copy.at };
}

/** What a batch writes besides attachments and events. */
interface BatchRows {
  readonly threads: readonly ThreadInsert[];
  readonly summaries: readonly ThreadSummaryUpdate[];
  readonly messages: readonly MessageInsert[];
  readonly contacts: readonly ContactInsert[];
  /** The raw rows done (finishRaw). */
  readonly raw: readonly InsertPart[];
}

/**
 * Copies of a batch written in one statement at most: each binds under 40 parameters (its message, thread and
 * summary) of the wire protocol's 65,535.
 */
const COPIES_PER_STATEMENT = 1000;

/**
 * The batch's threads, thread summaries, messages, contacts and raw rows in one statement (each round trip and
 * statement costs PostgreSQL and this thread more than a row of it: measured with bench:inbound-store); a batch of
 * more copies, a message to a thousand inboxes, a statement per table, split past the parameter limit.
 */
async function writeRows(tx: SqlTx, rows: BatchRows): Promise<void> {
  if (rows.messages.length <= COPIES_PER_STATEMENT) {
    const { threads, summaries, messages, contacts, raw } = rows;
    await insertTogether(tx, [...threadsInsert(threads), ...threadSummariesUpdate(summaries), ...messagesInsert(messages), ...contactsInsert(contacts), ...raw]);
    return;
  }
  await insertThreads(tx, rows.threads);
  await updateThreadSummaries(tx, rows.summaries);
  await insertMessages(tx, rows.messages);
  await insertContacts(tx, rows.contacts);
  for (const part of rows.raw) await runPart(tx, part);
}

/** The copies' attachments (at most MAX_ATTACHMENTS each), numbered from 1. */
function attachmentsOf(copies: readonly Copy[]): AttachmentInsert[] {
  return copies.flatMap((copy) =>
      copy.email.attachments.slice(0, MAX_ATTACHMENTS).map((a, i) => ({
        id: attachmentId(copy.id, i + 1),
        organizationId: copy.inbox.organization_id,
        inboxId: copy.inbox.id,
        messageId: copy.id,
        position: i + 1,
        filename: sanitizeFilename(a.filename, i + 1),
        contentType: a.contentType.slice(0, 255),
        content: a.content,
        scanState: "unscanned",
        scanDetail: null,
        scannedAt: null,
        createdAt: copy.at,
      })),
  );
}

function messageOf(copy: Copy, threadId: string): MessageInsert {
  const { email, message, inbox } = copy;
  const { raw } = message;
  return {
    id: copy.id,
    organizationId: inbox.organization_id,
    inboxId: inbox.id,
    threadId,
    direction: "inbound",
    internetMessageId: copy.internetMessageId,
    inReplyTo: email.inReplyTo,
    references: email.references,
    from: copy.from,
    to: email.to,
    cc: email.cc,
    replyTo: email.replyTo,
    subject: email.subject,
    text: email.text,
    html: email.html,
    metadata: {},
    deliveryStatus: "received",
    submissionId: null,
    failureCode: null,
    inboundSecurity: {
      remoteIp: raw.remote_ip,
      helo: raw.helo,
      tls: { encrypted: raw.tls_protocol !== null, protocol: raw.tls_protocol, cipher: raw.tls_cipher },
      ...(message.authentication ? { authentication: storedAuthentication(message.authentication) } : {}),
      senderRule: copy.senderRule,
    },
    // Nothing to scan is as good as scanned clean.
    attachmentsScanState: email.attachments.length > 0 ? "unscanned" : "clean",
    rawId: message.rawId,
    parseProblem: email.problem,
    extracted: email.extracted,
    senderAuthenticated: message.authentication?.senderAuthenticated ?? null,
    senderBlocked: isBlocked(copy),
    createdAt: copy.at,
    updatedAt: copy.at,
  };
}

/** The verdict as messages keep it (its log summary aside). */
function storedAuthentication({ summary: _, ...verdict }: SenderAuthentication): StoredAuthentication {
  return { ...verdict, dkimDomains: [...verdict.dkimDomains] };
}

/**
 * The claimed raw rows are done: deleted, or kept as `failed` with the parse's problem when the message was stored
 * from a partial parse, so nothing is lost and an operator can look at the original. Answers the statement parts.
 */
function finishRaw(log: Logger, claimed: readonly ParsedRaw[], now: Date): InsertPart[] {
  const partial = claimed.filter((m) => m.email?.problem);
  const done = claimed.filter((m) => !m.email?.problem);
  const parts: InsertPart[] = [];
  if (done.length > 0) parts.push((bind) => `delete from inbound_raw_messages where id = any(${bind(done.map((m) => m.rawId))}::uuid[])`);
  if (partial.length === 0) return parts;
  parts.push(
    (bind) =>
      `update inbound_raw_messages r set status = 'failed', error = v.error, processed_at = ${bind(now)}
         from unnest(${bind(partial.map((m) => m.rawId))}::uuid[], ${bind(partial.map((m) => m.email!.problem))}::text[]) as v(id, error)
        where r.id = v.id`,
  );
  for (const m of partial) log.warn("inbound message stored partially; raw kept", { rawId: m.rawId, problem: m.email!.problem });
  return parts;
}

/** A failed attempt: counted, and after MAX_ATTEMPTS the raw message is marked failed (kept, not retried). */
export async function recordFailure(db: Database, rawId: string, error: unknown): Promise<void> {
  await db.sql.query(
    `update inbound_raw_messages set attempts = attempts + 1, error = $1,
       status = case when attempts + 1 >= $2 then 'failed' else status end
     where id = $3 and status = 'pending'`,
    [error instanceof Error ? error.message : String(error), MAX_ATTEMPTS, rawId],
  );
}
