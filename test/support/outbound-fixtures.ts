// Committed submissions for delivery tests, written as acceptance writes them (through the tables' own inserts,
// src/db/tables: submission `pending` with the composed, unsigned MIME; recipients `pending`; queueId null), so
// delivery is tested on its own. Optionally with the outbound mailbox message (delivery status `submitted`) that
// delivery mirrors its status onto.
import { randomBytes, randomUUID } from "node:crypto";
import MailComposer from "nodemailer/lib/mail-composer";
import { IsolationLevel } from "@mikro-orm/core";
import type { Database } from "../../src/db/database.js";
import { insertMessages } from "../../src/db/tables/messages.js";
import { acceptedRecipient, acceptedSubmission, insertSubmissions } from "../../src/db/tables/submissions.js";
import { newId } from "../../src/ids.js";

export interface Address {
  readonly email: string;
  readonly name?: string;
}

export interface SubmissionFixture {
  readonly organizationId: string;
  readonly from: Address;
  readonly to: readonly Address[];
  readonly subject?: string;
  readonly text?: string;
  /** The sending inbox (null for /v1/send). */
  readonly inboxId?: string | null;
  /** Also store the outbound mailbox message the submission belongs to. */
  readonly withMessage?: boolean;
  /** Backdates the commit (queue lifetime, reconciler tests). */
  readonly createdAt?: Date;
  /** The task queue acceptance records; null (a row from before it was recorded) unless given. */
  readonly taskQueue?: string;
}

export interface InsertedSubmission {
  readonly submissionId: string;
  readonly messageId: string | null;
  readonly internetMessageId: string;
  readonly mime: Buffer;
  readonly recipientIds: string[];
}

export async function insertSubmission(db: Database, f: SubmissionFixture): Promise<InsertedSubmission> {
  const submissionId = randomUUID();
  const fromDomain = f.from.email.slice(f.from.email.lastIndexOf("@") + 1);
  const internetMessageId = `<${randomBytes(12).toString("hex")}@${fromDomain}>`;
  const subject = f.subject ?? "Delivery test";
  const createdAt = f.createdAt ?? new Date();
  const mime = await new MailComposer({
    from: { address: f.from.email, name: f.from.name ?? "" },
    to: f.to.map((a) => ({ address: a.email, name: a.name ?? "" })),
    subject,
    text: f.text ?? "Hello from the delivery tests.\n",
    messageId: internetMessageId,
    date: createdAt,
    disableFileAccess: true,
    disableUrlAccess: true,
  })
    .compile()
    .build();
  const inboxId = f.inboxId === undefined ? (f.withMessage ? newId("inb") : null) : f.inboxId;
  const messageId = f.withMessage ? newId("msg") : null;
  const recipientIds = f.to.map(() => randomUUID());

  await db.sql.transaction(async (tx) => {
    if (messageId) {
      await insertMessages(tx, [
        {
          id: messageId,
          organizationId: f.organizationId,
          inboxId: inboxId!,
          threadId: newId("thr"),
          direction: "outbound",
          internetMessageId,
          inReplyTo: null,
          references: [],
          from: f.from,
          to: f.to,
          cc: [],
          replyTo: null,
          subject,
          text: f.text ?? "",
          html: null,
          metadata: {},
          deliveryStatus: "submitted",
          submissionId,
          failureCode: null,
          inboundSecurity: null,
          attachmentsScanState: null,
          rawId: null,
          parseProblem: null,
          createdAt,
          updatedAt: createdAt,
        },
      ]);
    }
    await insertSubmissions(
      tx,
      [
        acceptedSubmission({
          id: submissionId,
          organizationId: f.organizationId,
          inboxId,
          messageId,
          from: f.from,
          subject,
          metadata: {},
          internetMessageId,
          mime,
          taskQueue: f.taskQueue ?? null,
          createdAt,
        }),
      ],
      f.to.map((to, position) =>
        acceptedRecipient({
          id: recipientIds[position]!,
          organizationId: f.organizationId,
          submissionId,
          position,
          email: to.email,
          name: to.name ?? null,
          domain: to.email.slice(to.email.lastIndexOf("@") + 1).toLowerCase(),
          updatedAt: createdAt,
        }),
      ),
    );
  });
  return { submissionId, messageId, internetMessageId, mime, recipientIds };
}

export interface SubmissionState {
  status: string;
  queueId: string | null;
  response: string | null;
  failureCode: string | null;
  recipients: { email: string; status: string; response: string | null; failureCode: string | null; attempts: number; deliveredAt: Date | null }[];
  /** The mailbox message's delivery status and failure code (undefined without a message). */
  message: { deliveryStatus: string; failureCode: string | null } | undefined;
}

export async function submissionState(db: Database, submissionId: string): Promise<SubmissionState> {
  // One snapshot (REPEATABLE READ), so the aggregate and the recipients read agree with each other.
  return db.fork().transactional(
    async (em) => {
      const [s] = await em.execute<{ status: string; queue_id: string | null; response: string | null; failure_code: string | null; message_id: string | null }[]>(
        `select status, queue_id, response, failure_code, message_id from submissions where id = ?`,
        [submissionId],
      );
      if (!s) throw new Error(`no submission ${submissionId}`);
      const recipients = await em.execute<
        { email: string; status: string; response: string | null; failure_code: string | null; attempts: number; delivered_at_ms: number | null }[]
      >(
        `select email, status, response, failure_code, attempts, (extract(epoch from delivered_at) * 1000)::float8 as delivered_at_ms
           from submission_recipients where submission_id = ? order by position`,
        [submissionId],
      );
      const [message] = s.message_id
        ? await em.execute<{ delivery_status: string; failure_code: string | null }[]>(`select delivery_status, failure_code from messages where id = ?`, [s.message_id])
        : [];
      return {
        status: s.status,
        queueId: s.queue_id,
        response: s.response,
        failureCode: s.failure_code,
        recipients: recipients.map((r) => ({
          email: r.email,
          status: r.status,
          response: r.response,
          failureCode: r.failure_code,
          attempts: r.attempts,
          deliveredAt: r.delivered_at_ms === null ? null : new Date(Number(r.delivered_at_ms)),
        })),
        message: message ? { deliveryStatus: message.delivery_status, failureCode: message.failure_code } : undefined,
      };
    },
    { isolationLevel: IsolationLevel.REPEATABLE_READ },
  );
}
