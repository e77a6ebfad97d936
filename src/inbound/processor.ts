// Processing of received mail: raw message → parse → one stored Message per admitted inbox (thread, attachments,
// message.received outbox rows) → raw row deleted, all in one transaction (the second and last commit of a
// message). After the commit, webhook deliveries are dispatched and attachment scans started.
//
// The transaction claims the raw row with FOR UPDATE SKIP LOCKED and holds it while parsing, so a message is
// processed once even when the sweeper of another process finds it too; a crash rolls back and leaves it pending.
// A parse that fails or exceeds its budget still stores the message from what was parsed (parseProblem says
// why) and keeps the raw row as `failed`, so nothing is lost and an operator can look at the original.
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Database } from "../db/database.js";
import { Attachment, InboundRawMessage, Inbox, Message, Thread } from "../db/entities/index.js";
import type { InboundRawMessageRow } from "../db/entities/inbound-raw-message.js";
import type { InboxRow } from "../db/entities/inbox.js";
import type { ThreadRow } from "../db/entities/thread.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import type { EmailParser, ParsedEmail } from "../mail/parse.js";
import { attachmentId, MAX_ATTACHMENTS, sanitizeFilename } from "./attachments.js";
import type { AttachmentScanStarter, MessageReceivedEvent, MessageReceivedOutbox } from "./ports.js";
import { parentMessageIds, summaryWith } from "./threading.js";

export interface InboundProcessorDeps {
  readonly db: Database;
  readonly parser: EmailParser;
  readonly outbox: MessageReceivedOutbox;
  readonly scans: AttachmentScanStarter;
  readonly log: Logger;
  /** Right-hand side of the Message-ID given to a message that came without one. */
  readonly hostname: string;
  /** Messages processed at once. */
  readonly concurrency: number;
  /** Mail to the feedback address: ARF reports, recorded as complaints instead of stored (src/outbound/feedback-reports.ts). */
  readonly feedbackReports?: {
    readonly address: string;
    record(em: EntityManager, raw: Uint8Array, rawId: string): Promise<void>;
  };
}

interface StoredInboundMessage extends MessageReceivedEvent {
  readonly attachmentCount: number;
}

export interface InboundProcessor {
  /** Queues a committed raw message. A full queue drops it: the sweeper finds every pending row. */
  submit(rawId: string): void;
  /** Stops taking work and waits for what runs; queued ids stay pending in the database. */
  stop(): Promise<void>;
}

/** Queued ids per process beyond which new ones wait for the sweeper instead of memory. */
const MAX_QUEUED = 10_000;
/** Failed attempts (errors, not parse problems) after which a raw message is marked failed and left alone. */
const MAX_ATTEMPTS = 5;

export function createInboundProcessor(deps: InboundProcessorDeps): InboundProcessor {
  const { db, log } = deps;
  const queued = new Set<string>();
  const running = new Map<string, Promise<void>>();
  let stopped = false;

  function pump(): void {
    for (const rawId of queued) {
      if (stopped || running.size >= deps.concurrency) return;
      queued.delete(rawId);
      const run = processOrRecord(rawId).finally(() => {
        running.delete(rawId);
        pump();
      });
      running.set(rawId, run);
    }
  }

  async function processOrRecord(rawId: string): Promise<void> {
    try {
      await process(rawId);
    } catch (error) {
      log.error("inbound processing failed", { rawId, error });
      await recordFailure(rawId, error).catch((e: unknown) =>
        log.error("recording an inbound failure failed", { rawId, error: e }),
      );
    }
  }

  /** Does nothing when the raw message is no longer pending (done, or being processed by another process). */
  async function process(rawId: string): Promise<void> {
    const committed = await db.fork().transactional(async (em) => {
      const raw = await em.findOne(
        InboundRawMessage,
        { id: rawId, status: "pending" },
        { lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE, populate: ["raw"] },
      );
      if (!raw) return null;
      // A report to the feedback address is recorded in this transaction (so once) and never stored in an inbox.
      if (deps.feedbackReports && raw.rcptTo.includes(deps.feedbackReports.address)) {
        await deps.feedbackReports.record(em, raw.raw, raw.id);
        if (raw.rcptTo.length === 1) {
          em.remove(raw);
          await em.flush();
          return { stored: [], deliveryIds: [] };
        }
      }
      const email = await deps.parser.parse(raw.raw);
      // FOR SHARE: an inbox delete (status → deleting, then the purge) waits for this commit, so the purge
      // cannot miss a message stored here, and a message never lands in an inbox already being purged.
      const inboxIds = [...new Set(raw.inboxIds)];
      const inboxes = await em.find(Inbox, { id: { $in: inboxIds }, status: "active" }, { lockMode: LockMode.PESSIMISTIC_READ });
      const now = new Date();
      const stored: StoredInboundMessage[] = [];
      const deliveryIds: string[] = [];
      for (const inbox of inboxes) {
        const message = await storeCopy(em, inbox, email, raw, now);
        stored.push(message);
        deliveryIds.push(...(await deps.outbox.enqueue(em, message)));
      }
      if (email.problem === null) {
        em.remove(raw);
      } else {
        raw.status = "failed";
        raw.error = email.problem;
        raw.processedAt = now;
        log.warn("inbound message stored partially; raw kept", { rawId, problem: email.problem });
      }
      await em.flush();
      return { stored, deliveryIds };
    });
    if (!committed) return;
    deps.outbox.dispatch(committed.deliveryIds);
    for (const message of committed.stored.filter((m) => m.attachmentCount > 0)) {
      // The scanning side retries unscanned attachments durably; a failed start here only delays the scan.
      deps.scans
        .start(message)
        .catch((error: unknown) => log.warn("attachment scan start failed", { messageId: message.messageId, error }));
    }
  }

  async function storeCopy(
    em: EntityManager,
    inbox: InboxRow,
    email: ParsedEmail,
    raw: InboundRawMessageRow,
    now: Date,
  ): Promise<StoredInboundMessage> {
    const thread = await threadFor(em, inbox, email, now);
    const messageId = newId("msg");
    const attachments = email.attachments.slice(0, MAX_ATTACHMENTS);
    attachments.forEach((a, i) =>
      em.create(Attachment, {
        id: attachmentId(messageId, i + 1),
        organization: inbox.organization,
        inboxId: inbox.id,
        messageId,
        position: i + 1,
        filename: sanitizeFilename(a.filename, i + 1),
        contentType: a.contentType.slice(0, 255),
        size: a.content.byteLength,
        content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength),
        scanState: "unscanned",
        scanDetail: null,
        scannedAt: null,
        createdAt: now,
      }),
    );
    em.create(Message, {
      id: messageId,
      organization: inbox.organization,
      inboxId: inbox.id,
      threadId: thread.id,
      direction: "inbound",
      // RFC 5321 lets the receiving server supply a missing Message-ID; one per raw message, so every inbox's
      // copy carries the same.
      internetMessageId: email.messageId ?? `<${raw.id}@${deps.hostname}>`,
      inReplyTo: email.inReplyTo,
      references: [...email.references],
      from: email.from ?? { email: raw.mailFrom },
      to: [...email.to],
      replyTo: email.replyTo,
      subject: email.subject,
      text: email.text,
      html: email.html,
      metadata: {},
      deliveryStatus: "received",
      submissionId: null,
      failureCode: null,
      inboundSecurity: {
        remoteIp: raw.remoteIp,
        helo: raw.helo,
        tls: { encrypted: raw.tlsProtocol !== null, protocol: raw.tlsProtocol ?? null, cipher: raw.tlsCipher ?? null },
      },
      // Nothing to scan is as good as scanned clean.
      attachmentsScanState: attachments.length > 0 ? "unscanned" : "clean",
      rawId: raw.id,
      parseProblem: email.problem,
      createdAt: now,
      updatedAt: now,
    });
    await em.flush();
    return {
      messageId,
      organizationId: inbox.organization.id,
      inboxId: inbox.id,
      threadId: thread.id,
      attachmentCount: attachments.length,
    };
  }

  /** The thread of the newest message of the inbox this one answers (locked for the summary), else a new one. */
  async function threadFor(em: EntityManager, inbox: InboxRow, email: ParsedEmail, now: Date): Promise<ThreadRow> {
    const parents = parentMessageIds(email);
    const parent =
      parents.length === 0
        ? null
        : await em.findOne(
            Message,
            { inboxId: inbox.id, internetMessageId: { $in: parents } },
            { fields: ["threadId"], orderBy: [{ createdAt: "desc" }, { id: "desc" }] },
          );
    const thread = parent && (await em.findOne(Thread, { id: parent.threadId }, { lockMode: LockMode.PESSIMISTIC_WRITE }));
    const addresses = [email.from, ...email.to, ...email.cc].flatMap((a) => (a ? [a.email] : []));
    const summary = summaryWith(thread ?? null, { subject: email.subject, addresses, at: now });
    if (thread) {
      Object.assign(thread, summary, { participants: [...summary.participants], updatedAt: now });
      return thread;
    }
    return em.create(Thread, {
      id: newId("thr"),
      organization: inbox.organization,
      inboxId: inbox.id,
      ...summary,
      participants: [...summary.participants],
      createdAt: now,
      updatedAt: now,
    });
  }

  /** A failed attempt: counted, and after MAX_ATTEMPTS the raw message is marked failed (kept, not retried). */
  async function recordFailure(rawId: string, error: unknown): Promise<void> {
    await db
      .fork()
      .getConnection()
      .execute(
        `update inbound_raw_messages set attempts = attempts + 1, error = ?,
           status = case when attempts + 1 >= ? then 'failed' else status end
         where id = ? and status = 'pending'`,
        [error instanceof Error ? error.message : String(error), MAX_ATTEMPTS, rawId],
        "run",
      );
  }

  return {
    submit(rawId) {
      if (stopped || running.has(rawId) || queued.size >= MAX_QUEUED) return;
      queued.add(rawId);
      pump();
    },
    async stop() {
      stopped = true;
      queued.clear();
      await Promise.all(running.values());
    },
  };
}
