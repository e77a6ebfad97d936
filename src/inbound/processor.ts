// Processing of received mail: raw message → parse → one stored Message per admitted inbox (thread, attachments,
// message.received outbox rows) → raw row deleted, all in one transaction (the second and last commit of a
// message). After the commit, webhook deliveries are dispatched and attachment scans started.
//
// The raw message is read and parsed before the transaction (a parse may take its whole budget and must hold no
// lock); the transaction then claims the row with FOR UPDATE SKIP LOCKED and stores only if it is still pending, so
// a message is stored once even when the sweeper of another process parses it too; a crash rolls back and leaves it
// pending. A parse that fails or exceeds its budget still stores the message from what was parsed (parseProblem
// says why) and keeps the raw row as `failed`, so nothing is lost and an operator can look at the original.
//
// Plain SQL on the driver's pool (db.sql), not the ORM: this is the hot path of inbound mail, and the ORM's unit of
// work cost more CPU than the statements themselves (measured with bench:inbound).
import type { Database, SqlTx } from "../db/database.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import type { EmailParser, ParsedEmail } from "../mail/parse.js";
import { attachmentId, MAX_ATTACHMENTS, sanitizeFilename } from "./attachments.js";
import type { AttachmentScanStarter, MessageReceivedEvent, MessageReceivedOutbox } from "./ports.js";
import type { ReceivedMessage } from "./receive.js";
import { parentMessageIds, summaryWith } from "./threading.js";

export interface InboundProcessorDeps {
  readonly db: Database;
  readonly parser: EmailParser;
  readonly outbox: MessageReceivedOutbox;
  readonly scans: AttachmentScanStarter;
  readonly log: Logger;
  /** Right-hand side of the Message-ID given to a message that came without one. */
  readonly hostname: string;
  /** Messages processed at once (parsing is bounded separately by the parser's worker threads). */
  readonly concurrency: number;
  /** Mail to the feedback address: ARF reports, recorded as complaints instead of stored (src/outbound/feedback-reports.ts). */
  readonly feedbackReports?: {
    readonly address: string;
    record(tx: SqlTx, raw: Uint8Array, rawId: string): Promise<void>;
  };
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

interface InboxRef {
  readonly id: string;
  readonly organization_id: string;
}

export interface InboundProcessor {
  /** Queues a committed raw message. A full queue drops it: the sweeper finds every pending row. */
  /**
   * Queues a committed raw message; the receiving process passes what it committed, so the message is not read
   * back (the sweeper passes ids only).
   */
  submit(rawId: string, received?: ReceivedMessage): void;
  /** Stops taking work and waits for what runs; queued ids stay pending in the database. */
  stop(): Promise<void>;
}

/** Queued ids per process beyond which new ones wait for the sweeper instead of memory. */
const MAX_QUEUED = 10_000;
/** Queued messages whose bytes are kept in memory; beyond that only the id is queued and the row read back. */
const MAX_QUEUED_IN_MEMORY = 1_000;
/** Failed attempts (errors, not parse problems) after which a raw message is marked failed and left alone. */
const MAX_ATTEMPTS = 5;

export function createInboundProcessor(deps: InboundProcessorDeps): InboundProcessor {
  const { db, log } = deps;
  const queued = new Map<string, RawRow | undefined>();
  let queuedInMemory = 0;
  const running = new Map<string, Promise<void>>();
  let stopped = false;

  function pump(): void {
    for (const [rawId, known] of queued) {
      if (stopped || running.size >= deps.concurrency) return;
      queued.delete(rawId);
      if (known) queuedInMemory--;
      const run = processOrRecord(rawId, known).finally(() => {
        running.delete(rawId);
        pump();
      });
      running.set(rawId, run);
    }
  }

  async function processOrRecord(rawId: string, known: RawRow | undefined): Promise<void> {
    try {
      await process(rawId, known);
    } catch (error) {
      log.error("inbound processing failed", { rawId, error });
      await recordFailure(rawId, error).catch((e: unknown) =>
        log.error("recording an inbound failure failed", { rawId, error: e }),
      );
    }
  }

  /** Does nothing when the raw message is no longer pending (done, or being processed by another process). */
  async function process(rawId: string, known: RawRow | undefined): Promise<void> {
    const [raw] = known
      ? [known]
      : await db.sql.query<RawRow>(
          `select raw, rcpt_to, inbox_ids, mail_from, remote_ip, helo, tls_protocol, tls_cipher
             from inbound_raw_messages where id = $1 and status = 'pending'`,
          [rawId],
        );
    if (!raw) return;
    const feedback = deps.feedbackReports && raw.rcpt_to.includes(deps.feedbackReports.address) ? deps.feedbackReports : undefined;
    const forInboxes = raw.inbox_ids.length > (feedback ? 1 : 0);
    const email = forInboxes ? await deps.parser.parse(raw.raw) : null;
    const committed = await db.sql.transaction(async (tx) => {
      const [claimed] = await tx.query(`select 1 from inbound_raw_messages where id = $1 and status = 'pending' for update skip locked`, [rawId]);
      if (!claimed) return null;
      // A report to the feedback address is recorded in this transaction (so once) and never stored in an inbox.
      if (feedback) await feedback.record(tx, raw.raw, rawId);
      const stored: StoredInboundMessage[] = [];
      const enqueued: unknown[] = [];
      const now = new Date();
      if (email) {
        // FOR SHARE: an inbox delete (status → deleting, then the purge) waits for this commit, so the purge
        // cannot miss a message stored here, and a message never lands in an inbox already being purged.
        const inboxes = await tx.query<InboxRef>(
          `select id, organization_id from inboxes where id = any($1) and status = 'active' order by id for share`,
          [[...new Set(raw.inbox_ids)]],
        );
        for (const inbox of inboxes) {
          const message = await storeCopy(tx, inbox, email, raw, rawId, now);
          stored.push(message);
          enqueued.push(...(await deps.outbox.enqueue(tx, message)));
        }
      }
      if (email?.problem) {
        await tx.query(`update inbound_raw_messages set status = 'failed', error = $2, processed_at = $3 where id = $1`, [rawId, email.problem, now]);
        log.warn("inbound message stored partially; raw kept", { rawId, problem: email.problem });
      } else {
        await tx.query(`delete from inbound_raw_messages where id = $1`, [rawId]);
      }
      return { stored, enqueued };
    });
    if (!committed) return;
    deps.outbox.dispatch(committed.enqueued);
    for (const message of committed.stored.filter((m) => m.attachmentCount > 0)) {
      // The scanning side retries unscanned attachments durably; a failed start here only delays the scan.
      deps.scans
        .start(message)
        .catch((error: unknown) => log.warn("attachment scan start failed", { messageId: message.messageId, error }));
    }
  }

  async function storeCopy(tx: SqlTx, inbox: InboxRef, email: ParsedEmail, raw: RawRow, rawId: string, now: Date): Promise<StoredInboundMessage> {
    const threadId = await threadFor(tx, inbox, email, now);
    const messageId = newId("msg");
    const attachments = email.attachments.slice(0, MAX_ATTACHMENTS);
    await tx.query(
      `insert into messages (id, organization_id, inbox_id, thread_id, direction, internet_message_id, in_reply_to, "references",
         "from", "to", reply_to, subject, text, html, metadata, delivery_status, submission_id, failure_code, inbound_security,
         attachments_scan_state, raw_id, parse_problem, created_at, updated_at)
       values ($1, $2, $3, $4, 'inbound', $5, $6, $7, $8, $9, $10, $11, $12, $13, '{}', 'received', null, null, $14, $15, $16, $17, $18, $18)`,
      [
        messageId,
        inbox.organization_id,
        inbox.id,
        threadId,
        // RFC 5321 lets the receiving server supply a missing Message-ID; one per raw message, so every inbox's
        // copy carries the same.
        email.messageId ?? `<${rawId}@${deps.hostname}>`,
        email.inReplyTo,
        [...email.references],
        JSON.stringify(email.from ?? { email: raw.mail_from }),
        JSON.stringify(email.to),
        email.replyTo === null ? null : JSON.stringify(email.replyTo),
        email.subject,
        email.text,
        email.html,
        JSON.stringify({
          remoteIp: raw.remote_ip,
          helo: raw.helo,
          tls: { encrypted: raw.tls_protocol !== null, protocol: raw.tls_protocol, cipher: raw.tls_cipher },
        }),
        // Nothing to scan is as good as scanned clean.
        attachments.length > 0 ? "unscanned" : "clean",
        rawId,
        email.problem,
        now,
      ],
    );
    for (const [i, a] of attachments.entries()) {
      await tx.query(
        `insert into attachments (id, organization_id, inbox_id, message_id, position, filename, content_type, size, content,
           scan_state, scan_detail, scanned_at, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'unscanned', null, null, $10)`,
        [
          attachmentId(messageId, i + 1),
          inbox.organization_id,
          inbox.id,
          messageId,
          i + 1,
          sanitizeFilename(a.filename, i + 1),
          a.contentType.slice(0, 255),
          a.content.byteLength,
          Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength),
          now,
        ],
      );
    }
    return { messageId, organizationId: inbox.organization_id, inboxId: inbox.id, threadId, attachmentCount: attachments.length };
  }

  /** The thread of the newest message of the inbox this one answers (locked for the summary), else a new one. */
  async function threadFor(tx: SqlTx, inbox: InboxRef, email: ParsedEmail, now: Date): Promise<string> {
    const parents = parentMessageIds(email);
    const [thread] =
      parents.length === 0
        ? []
        : await tx.query<{ id: string; subject: string; participants: string[]; message_count: number; last_message_at: Date }>(
            `select t.id, t.subject, t.participants, t.message_count, t.last_message_at from threads t
              where t.id = (select m.thread_id from messages m where m.inbox_id = $1 and m.internet_message_id = any($2)
                             order by m.created_at desc, m.id desc limit 1)
              for update`,
            [inbox.id, parents],
          );
    const addresses = [email.from, ...email.to, ...email.cc].flatMap((a) => (a ? [a.email] : []));
    const current = thread
      ? { subject: thread.subject, participants: thread.participants, messageCount: thread.message_count, lastMessageAt: thread.last_message_at }
      : null;
    const summary = summaryWith(current, { subject: email.subject, addresses, at: now });
    if (thread) {
      await tx.query(
        `update threads set participants = $2, message_count = $3, last_message_at = $4, updated_at = $5 where id = $1`,
        [thread.id, [...summary.participants], summary.messageCount, summary.lastMessageAt, now],
      );
      return thread.id;
    }
    const id = newId("thr");
    await tx.query(
      `insert into threads (id, organization_id, inbox_id, subject, participants, message_count, last_message_at, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
      [id, inbox.organization_id, inbox.id, summary.subject, [...summary.participants], summary.messageCount, summary.lastMessageAt, now],
    );
    return id;
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
    submit(rawId, received) {
      if (stopped || running.has(rawId) || queued.has(rawId) || queued.size >= MAX_QUEUED) return;
      const keep = received !== undefined && queuedInMemory < MAX_QUEUED_IN_MEMORY;
      if (keep) queuedInMemory++;
      queued.set(rawId, keep ? rawRowOf(received) : undefined);
      pump();
    },
    async stop() {
      stopped = true;
      queued.clear();
      queuedInMemory = 0;
      await Promise.all(running.values());
    },
  };
}
