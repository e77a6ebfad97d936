// Processing of received mail: raw message → parse (and extract, src/extraction) → one stored Message per admitted
// inbox (thread, attachments, its message.received event in the event log and the webhook outbox) → raw row
// deleted, in one transaction (the second and last commit of a message).
// After the commit, webhook deliveries are dispatched and attachment scans started.
//
// The raw message is read and parsed before the transaction (a parse may take its whole budget and must hold no
// lock); the transaction then claims the row with FOR UPDATE SKIP LOCKED and stores only if it is still pending, so
// a message is stored once even when the sweeper of another process parses it too; a crash rolls back and leaves it
// pending. A parse that fails or exceeds its budget still stores the message from what was parsed (parseProblem
// says why) and keeps the raw row as `failed`, so nothing is lost and an operator can look at the original.
//
// Parsed messages are stored in batches: one transaction stores every message that is ready, with the same dozen
// round trips whatever its size (each round trip waits its turn on a busy machine; per message they capped
// bench:inbound). A batch starts at once when no store runs, so at low load a batch is one message and nothing
// waits; under load the next batch fills while one is stored. A batch that fails is stored again one message at a
// time, so a bad message fails alone.
//
// Memory is bounded in bytes (memoryBytes), half for each side: the raw bytes of messages queued with them, and
// those of messages being parsed, waiting to be stored and being stored (a larger message is taken alone). A message
// queued beyond its half keeps only its id and size and is read back when its turn comes; the halves keep a long
// queue of bytes from holding back the messages in hand. The queue itself holds at most maxQueued ids; beyond
// it messages wait in PostgreSQL for the sweeper.
//
// Plain SQL on the driver's pool (db.sql), not the ORM: this is the hot path of inbound mail, and the ORM's unit of
// work cost more CPU than the statements themselves (measured with bench:inbound).
import type { Database, SqlTx } from "../db/database.js";
import { insertMessages as insertMessageRows, type MessageInsert } from "../db/tables/messages.js";
import { insertRows, runValues } from "../db/values.js";
import { appendEvents } from "../events/log.js";
import { messageReceivedEvents } from "../events/message-received.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import type { EmailParser, ParsedEmail } from "../mail/parse.js";
import { attachmentId, MAX_ATTACHMENTS, sanitizeFilename } from "./attachments.js";
import type { AttachmentScanStarter, MessageReceivedEvent, MessageReceivedOutbox } from "./ports.js";
import { readChunks, type ReceivedMessage } from "./receive.js";
import { parentMessageIds, summaryWith, type ThreadSummary } from "./threading.js";

interface FeedbackReports {
  readonly address: string;
  /** Authenticates the report before the store transaction (DNS lookups); what it returns records it inside. */
  check(raw: RawRow, rawId: string): Promise<CheckedFeedback>;
}

interface CheckedFeedback {
  record(tx: SqlTx): Promise<void>;
}

export interface InboundProcessorDeps {
  readonly db: Database;
  readonly parser: EmailParser;
  readonly outbox: MessageReceivedOutbox;
  readonly scans: AttachmentScanStarter;
  readonly log: Logger;
  /** Right-hand side of the Message-ID given to a message that came without one. */
  readonly hostname: string;
  /** Messages read and parsed at once (parsing is bounded separately by the parser's worker threads). */
  readonly concurrency: number;
  /** Raw bytes held at once: queued with their bytes, parsing, ready and storing (INBOUND_PROCESSING_MEMORY_BYTES). */
  readonly memoryBytes: number;
  /** Ids queued at most; beyond, messages wait in the database for the sweeper. */
  readonly maxQueued: number;
  /** Mail to the feedback address: ARF reports, recorded as complaints instead of stored (src/outbound/feedback-reports.ts). */
  readonly feedbackReports?: FeedbackReports;
}

interface StoredInboundMessage extends MessageReceivedEvent {
  readonly attachmentCount: number;
}

interface RawRow {
  readonly raw: Buffer;
  readonly rcpt_to: string[];
  readonly inbox_ids: string[];
  readonly mail_from: string;
  readonly remote_ip: string;
  readonly helo: string;
  readonly tls_protocol: string | null;
  readonly tls_cipher: string | null;
}

function rawRowOf(m: ReceivedMessage): RawRow {
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

/** A message waiting to be taken: its bytes too when they were passed and memory allowed. */
interface Queued {
  readonly seq: number;
  readonly size: number;
  readonly known: RawRow | undefined;
}

interface InboxRef {
  readonly id: string;
  readonly organization_id: string;
}

/** A raw message parsed and waiting to be stored. */
interface ParsedRaw {
  readonly rawId: string;
  /** Order of submission: a batch stores its messages in the order they were received. */
  readonly seq: number;
  readonly raw: RawRow;
  /** Null when the message goes to the feedback address only (there is no inbox to store it in). */
  readonly email: ParsedEmail | null;
  readonly feedback: CheckedFeedback | undefined;
  /** What it adds to a batch's statements: its size once per inbox copy. */
  readonly bytes: number;
}

/** One inbox's copy of a parsed message, as it is about to be stored. */
interface Copy {
  readonly message: ParsedRaw;
  readonly email: ParsedEmail;
  readonly inbox: InboxRef;
  readonly id: string;
  readonly internetMessageId: string;
  readonly at: Date;
}

interface ThreadRow {
  readonly copy: number;
  readonly id: string;
  readonly subject: string;
  readonly participants: string[];
  readonly message_count: number;
  readonly last_message_at: Date;
}

/** A thread the batch adds messages to: one already stored (locked), or one the batch starts. */
interface ThreadChange {
  readonly id: string;
  readonly inbox: InboxRef;
  readonly isNew: boolean;
  /** For a new thread, when its first message came. */
  readonly createdAt: Date;
  summary: ThreadSummary;
  /** When the batch's last message joined it. */
  updatedAt: Date;
}

export interface InboundProcessor {
  /**
   * Queues a committed raw message of `size` bytes; the receiving process passes what it committed, so the message
   * is not read back while memory allows (the sweeper passes ids only). False when the queue is full (or the
   * processor stopped): the message is not taken, and the sweeper finds it among the pending rows later. A message
   * already in hand counts as taken.
   */
  submit(rawId: string, size: number, received?: ReceivedMessage): boolean;
  /** Messages taken and not yet done (queued or in hand), and their raw bytes. */
  backlog(): { readonly messages: number; readonly bytes: number };
  /** Stops taking work and waits for what runs (what is parsed is stored); queued ids stay pending in the database. */
  stop(): Promise<void>;
}

/** Failed attempts (errors, not parse problems) after which a raw message is marked failed and left alone. */
const MAX_ATTEMPTS = 5;
/** Messages per store transaction at most. */
const MAX_BATCH_MESSAGES = 64;
/** Message bytes (times inbox copies) per store transaction at most; a larger message goes alone. */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;
/** Store transactions at once per process: one storing, the next filling (it starts early only when full). */
const MAX_STORING = 2;

export function createInboundProcessor(deps: InboundProcessorDeps): InboundProcessor {
  const { db, log } = deps;
  const queued = new Map<string, Queued>();
  /** Sizes of every queued message, and of those queued with their bytes. */
  let queuedBytes = 0;
  let queuedKnownBytes = 0;
  let submitted = 0;
  /** Ids taken off the queue and not done yet (parsing, ready or storing), with their sizes. */
  const inHand = new Map<string, number>();
  let inHandBytes = 0;
  let parsing = 0;
  const ready: ParsedRaw[] = [];
  let readyBytes = 0;
  let storing = 0;
  /** Time given to the last message stored (epoch ms): later messages of this process get later times. */
  let lastStoredAt = 0;
  const running = new Set<Promise<void>>();
  let stopped = false;

  function track(work: Promise<void>): void {
    running.add(work);
    void work.finally(() => running.delete(work));
  }

  /** A full batch is ready: no more parsing until it is stored (bounds memory), and it needs no store to end. */
  const readyIsFull = () => ready.length >= MAX_BATCH_MESSAGES || readyBytes >= MAX_BATCH_BYTES;

  /** Whether a queued message may be taken now: bytes in hand stay within their half, or it goes alone. */
  const fits = ({ size }: Queued) => inHandBytes === 0 || inHandBytes + size <= deps.memoryBytes / 2;

  function release(rawId: string): void {
    inHandBytes -= inHand.get(rawId) ?? 0;
    inHand.delete(rawId);
  }

  function pump(): void {
    for (const [rawId, entry] of queued) {
      if (stopped || parsing >= deps.concurrency || readyIsFull() || !fits(entry)) return;
      const { seq, size, known } = entry;
      queued.delete(rawId);
      queuedBytes -= size;
      if (known) queuedKnownBytes -= size;
      inHand.set(rawId, size);
      inHandBytes += size;
      parsing++;
      track(
        parseOrRecord(rawId, seq, known).finally(() => {
          parsing--;
          pump();
        }),
      );
    }
  }

  async function parseOrRecord(rawId: string, seq: number, known: RawRow | undefined): Promise<void> {
    let parsed: ParsedRaw | null;
    try {
      parsed = await parse(rawId, seq, known);
    } catch (error) {
      parsed = null;
      await failed(rawId, error);
    }
    if (!parsed) {
      release(rawId);
      return;
    }
    ready.push(parsed);
    readyBytes += parsed.bytes;
    flush();
  }

  /** Null when the raw message is no longer pending (done, or being processed by another process). */
  async function parse(rawId: string, seq: number, known: RawRow | undefined): Promise<ParsedRaw | null> {
    const raw = known ?? (await readBack(rawId));
    if (!raw) return null;
    const feedback = deps.feedbackReports && raw.rcpt_to.includes(deps.feedbackReports.address) ? await deps.feedbackReports.check(raw, rawId) : undefined;
    const forInboxes = raw.inbox_ids.length > (feedback ? 1 : 0);
    const email = forInboxes ? await deps.parser.parse(raw.raw) : null;
    return { rawId, seq, raw, email, feedback, bytes: raw.raw.byteLength * Math.max(1, raw.inbox_ids.length) };
  }

  async function readBack(rawId: string): Promise<RawRow | null> {
    const [row] = await db.sql.query<RawRow & { size: number }>(
      `select raw, size, rcpt_to, inbox_ids, mail_from, remote_ip, helo, tls_protocol, tls_cipher
         from inbound_raw_messages where id = $1 and status = 'pending'`,
      [rawId],
    );
    if (!row || row.raw.length === row.size) return row ?? null;
    return { ...row, raw: await readChunks(db.sql, rawId, row.size) };
  }

  function flush(): void {
    while (ready.length > 0 && (storing === 0 || (storing < MAX_STORING && readyIsFull()))) {
      const batch = takeBatch();
      storing++;
      track(
        storeOrIsolate(batch).finally(() => {
          storing--;
          for (const message of batch) release(message.rawId);
          flush();
          pump();
        }),
      );
    }
  }

  function takeBatch(): ParsedRaw[] {
    let count = 0;
    let bytes = 0;
    while (count < ready.length && count < MAX_BATCH_MESSAGES && (count === 0 || bytes + ready[count]!.bytes <= MAX_BATCH_BYTES)) {
      bytes += ready[count]!.bytes;
      count++;
    }
    readyBytes -= bytes;
    // Parses finish out of order; a reply received after its parent must come after it to join its thread.
    return ready.splice(0, count).sort((a, b) => a.seq - b.seq);
  }

  async function storeOrIsolate(batch: readonly ParsedRaw[]): Promise<void> {
    try {
      await store(batch);
    } catch (error) {
      if (batch.length === 1) return failed(batch[0]!.rawId, error);
      // Whatever failed (a message the database refuses, a deadlock), one message must not hold back the others:
      // each is stored alone, and only a message that fails alone counts a failed attempt.
      log.warn("inbound batch failed; storing its messages one at a time", { messages: batch.length, error });
      for (const message of batch) await storeOrIsolate([message]);
    }
  }

  async function failed(rawId: string, error: unknown): Promise<void> {
    log.error("inbound processing failed", { rawId, error });
    await recordFailure(rawId, error).catch((e: unknown) => log.error("recording an inbound failure failed", { rawId, error: e }));
  }

  async function store(batch: readonly ParsedRaw[]): Promise<void> {
    const committed = await db.sql.transaction((tx) => storeIn(tx, batch));
    deps.outbox.dispatch(committed.enqueued);
    for (const message of committed.stored.filter((m) => m.attachmentCount > 0)) {
      // The scanning side retries unscanned attachments durably; a failed start here only delays the scan.
      deps.scans
        .start(message)
        .catch((error: unknown) => log.warn("attachment scan start failed", { messageId: message.messageId, error }));
    }
  }

  /** Stores the batch's messages that are still pending; the others are done or in another process's hands. */
  async function storeIn(tx: SqlTx, batch: readonly ParsedRaw[]): Promise<{ stored: StoredInboundMessage[]; enqueued: unknown[] }> {
    const claimedIds = await tx.query<{ id: string }>(
      `select id from inbound_raw_messages where id = any($1) and status = 'pending' for update skip locked`,
      [batch.map((m) => m.rawId)],
    );
    const claimedSet = new Set(claimedIds.map((r) => r.id));
    const claimed = batch.filter((m) => claimedSet.has(m.rawId));
    if (claimed.length === 0) return { stored: [], enqueued: [] };
    const now = new Date();
    for (const message of claimed) {
      // A report to the feedback address is recorded in this transaction (so once) and never stored in an inbox.
      if (message.feedback) await message.feedback.record(tx);
    }

    const parsed = claimed.filter((m) => m.email !== null);
    const inboxIds = [...new Set(parsed.flatMap((m) => m.raw.inbox_ids))];
    // FOR SHARE: an inbox delete (status → deleting, then the purge) waits for this commit, so the purge cannot miss
    // a message stored here, and a message never lands in an inbox already being purged.
    const inboxes =
      inboxIds.length === 0
        ? []
        : await tx.query<InboxRef>(`select id, organization_id from inboxes where id = any($1) and status = 'active' order by id for share`, [
            inboxIds,
          ]);
    const copies = parsed.flatMap((message): Copy[] => {
      const email = message.email!;
      // RFC 5321 lets the receiving server supply a missing Message-ID; one per raw message, so every inbox's copy
      // carries the same.
      const internetMessageId = email.messageId ?? `<${message.rawId}@${deps.hostname}>`;
      // At least a millisecond after the previous message this process stored: ids are random, so equal times
      // would list a batch (a parent and its reply included) in any order.
      lastStoredAt = Math.max(now.getTime(), lastStoredAt + 1);
      const at = new Date(lastStoredAt);
      return inboxes
        .filter((inbox) => message.raw.inbox_ids.includes(inbox.id))
        .map((inbox) => ({ message, email, inbox, id: newId("msg"), internetMessageId, at }));
    });

    const threadIds = await threadsFor(tx, copies);
    await insertMessages(tx, copies, threadIds);
    const stored = copies.map((c, i) => ({
      messageId: c.id,
      organizationId: c.inbox.organization_id,
      inboxId: c.inbox.id,
      threadId: threadIds[i]!,
      attachmentCount: Math.min(c.email.attachments.length, MAX_ATTACHMENTS),
    }));
    const events = messageReceivedEvents(stored, now);
    const enqueued = events.length === 0 ? [] : await deps.outbox.enqueue(tx, events);

    const partial = claimed.filter((m) => m.email?.problem);
    const done = claimed.filter((m) => !m.email?.problem);
    if (done.length > 0) await tx.query(`delete from inbound_raw_messages where id = any($1)`, [done.map((m) => m.rawId)]);
    if (partial.length > 0) {
      await tx.query(
        `update inbound_raw_messages r set status = 'failed', error = v.error, processed_at = $3
           from unnest($1::uuid[], $2::text[]) as v(id, error) where r.id = v.id`,
        [partial.map((m) => m.rawId), partial.map((m) => m.email!.problem), now],
      );
      for (const m of partial) log.warn("inbound message stored partially; raw kept", { rawId: m.rawId, problem: m.email!.problem });
    }
    // Last: it holds the organizations' event-log turns until the commit.
    await appendEvents(tx, events);
    return { stored, enqueued };
  }

  /**
   * The thread of each copy, in copy order: the thread of the newest message of its inbox it answers, else a new
   * one. Messages of the batch are newer than any stored one, so an earlier copy of the batch is looked for first,
   * then the database; the summaries of the threads touched are folded over the batch's messages in order and
   * written (existing threads locked FOR UPDATE by the lookup).
   */
  async function threadsFor(tx: SqlTx, copies: readonly Copy[]): Promise<string[]> {
    const inBatchParent: (number | undefined)[] = [];
    const latestInBatch = new Map<string, number>();
    const key = (inboxId: string, internetMessageId: string) => `${inboxId} ${internetMessageId}`;
    for (const [i, copy] of copies.entries()) {
      const parents = parentMessageIds(copy.email).map((id) => latestInBatch.get(key(copy.inbox.id, id)) ?? -1);
      const newest = Math.max(-1, ...parents);
      inBatchParent.push(newest >= 0 ? newest : undefined);
      latestInBatch.set(key(copy.inbox.id, copy.internetMessageId), i);
    }
    const lookups = copies.flatMap((copy, i) =>
      inBatchParent[i] === undefined ? parentMessageIds(copy.email).map((parent) => ({ copy: i, inboxId: copy.inbox.id, parent })) : [],
    );
    // One lookup for the whole batch; the threads are locked in id order, so batches that share threads never
    // wait on each other in a circle.
    const found =
      lookups.length === 0
        ? []
        : await tx.query<ThreadRow>(
            `with parent as (
               select distinct on (w.copy) w.copy, m.thread_id
                 from unnest($1::int[], $2::text[], $3::text[]) as w(copy, inbox_id, internet_message_id)
                 join messages m on m.inbox_id = w.inbox_id and m.internet_message_id = w.internet_message_id
                order by w.copy, m.created_at desc, m.id desc)
             select p.copy, t.id, t.subject, t.participants, t.message_count, t.last_message_at
               from parent p join threads t on t.id = p.thread_id
              order by t.id
                for update of t`,
            [lookups.map((l) => l.copy), lookups.map((l) => l.inboxId), lookups.map((l) => l.parent)],
          );
    const storedThreadOf = new Map(found.map((row) => [row.copy, row]));

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
      const current = row
        ? { subject: row.subject, participants: row.participants, messageCount: row.message_count, lastMessageAt: row.last_message_at }
        : null;
      const id = row?.id ?? newId("thr");
      changes.set(id, { id, inbox: copy.inbox, isNew: !row, createdAt: copy.at, summary: summaryWith(current, joining(copy)), updatedAt: copy.at });
      threadIds.push(id);
    }

    const started = [...changes.values()].filter((t) => t.isNew);
    const joined = [...changes.values()].filter((t) => !t.isNew);
    await insertRows(
      tx,
      `insert into threads (id, organization_id, inbox_id, subject, participants, message_count, last_message_at, created_at, updated_at) values`,
      started,
      ({ id, inbox, createdAt, summary: s, updatedAt }, bind) =>
        `(${[id, inbox.organization_id, inbox.id, s.subject, [...s.participants], s.messageCount, s.lastMessageAt, createdAt, updatedAt].map(bind).join(", ")})`,
    );
    await runValues(
      tx,
      (values) =>
        `update threads t set participants = v.participants, message_count = v.message_count, last_message_at = v.last_message_at,
           updated_at = v.updated_at
           from (values ${values}) as v(id, participants, message_count, last_message_at, updated_at)
          where t.id = v.id`,
      joined,
      (t, bind) =>
        `(${bind(t.id)}::text, ${bind([...t.summary.participants])}::text[], ${bind(t.summary.messageCount)}::int, ${bind(t.summary.lastMessageAt)}::timestamptz, ${bind(t.updatedAt)}::timestamptz)`,
    );
    return threadIds;
  }

  async function insertMessages(tx: SqlTx, copies: readonly Copy[], threadIds: readonly string[]): Promise<void> {
    await insertMessageRows(
      tx,
      copies.map((copy, i): MessageInsert => {
        const { email, message, inbox } = copy;
        const { raw } = message;
        return {
          id: copy.id,
          organizationId: inbox.organization_id,
          inboxId: inbox.id,
          threadId: threadIds[i]!,
          direction: "inbound",
          internetMessageId: copy.internetMessageId,
          inReplyTo: email.inReplyTo,
          references: email.references,
          from: email.from ?? { email: raw.mail_from },
          to: email.to,
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
          },
          // Nothing to scan is as good as scanned clean.
          attachmentsScanState: email.attachments.length > 0 ? "unscanned" : "clean",
          rawId: message.rawId,
          parseProblem: email.problem,
          extracted: email.extracted,
          createdAt: copy.at,
          updatedAt: copy.at,
        };
      }),
    );
    const attachments = copies.flatMap((copy) =>
      copy.email.attachments.slice(0, MAX_ATTACHMENTS).map((attachment, i) => ({ copy, attachment, position: i + 1 })),
    );
    await insertRows(
      tx,
      `insert into attachments (id, organization_id, inbox_id, message_id, position, filename, content_type, size, content,
         scan_state, scan_detail, scanned_at, created_at) values`,
      attachments,
      ({ copy, attachment: a, position }, bind) =>
        `(${[
          bind(attachmentId(copy.id, position)),
          bind(copy.inbox.organization_id),
          bind(copy.inbox.id),
          bind(copy.id),
          bind(position),
          bind(sanitizeFilename(a.filename, position)),
          bind(a.contentType.slice(0, 255)),
          bind(a.content.byteLength),
          // A Buffer travels as binary; inside an array it would travel as hex text.
          bind(Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength)),
          "'unscanned'",
          "null",
          "null",
          bind(copy.at),
        ].join(", ")})`,
    );
  }

  /** A failed attempt: counted, and after MAX_ATTEMPTS the raw message is marked failed (kept, not retried). */
  async function recordFailure(rawId: string, error: unknown): Promise<void> {
    await db.sql.query(
      `update inbound_raw_messages set attempts = attempts + 1, error = $1,
         status = case when attempts + 1 >= $2 then 'failed' else status end
       where id = $3 and status = 'pending'`,
      [error instanceof Error ? error.message : String(error), MAX_ATTEMPTS, rawId],
    );
  }

  return {
    submit(rawId, size, received) {
      if (inHand.has(rawId) || queued.has(rawId)) return true;
      if (stopped || queued.size >= deps.maxQueued) return false;
      const keep = received !== undefined && queuedKnownBytes + size <= deps.memoryBytes / 2;
      queued.set(rawId, { seq: submitted++, size, known: keep ? rawRowOf(received) : undefined });
      queuedBytes += size;
      if (keep) queuedKnownBytes += size;
      pump();
      return true;
    },
    backlog: () => ({ messages: queued.size + inHand.size, bytes: queuedBytes + inHandBytes }),
    async stop() {
      stopped = true;
      queued.clear();
      queuedBytes = 0;
      queuedKnownBytes = 0;
      // A store started by a parse that ends now is waited for too.
      while (running.size > 0) await Promise.all(running);
    },
  };
}

function joining(copy: Copy) {
  const { email } = copy;
  const addresses = [email.from, ...email.to, ...email.cc].flatMap((a) => (a ? [a.email] : []));
  return { subject: email.subject, addresses, at: copy.at };
}
