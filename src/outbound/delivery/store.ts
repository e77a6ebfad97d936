// The delivery state in PostgreSQL, in raw SQL (hot, small statements). Every change to recipients recomputes the
// submission's aggregate and mirrors it onto the mailbox message in the same transaction, under a row lock on the
// submission, so parallel domains of one submission never write a stale aggregate. Recipients that are final
// (delivered, bounced, failed) are never changed again: a repeated activity cannot undo or resend them.
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Database } from "../../db/database.js";
import { aggregateStatus, messageDeliveryStatus, queueIdOf, type SubmissionStatus } from "./aggregate.js";

const OPEN = `('pending', 'queued', 'deferred')`;

export interface OpenRecipient {
  readonly id: string;
  readonly email: string;
}

/** What one attempt to one domain needs: the envelope sender, the stored bytes and the recipients still open. */
export interface AttemptInput {
  readonly submissionId: string;
  readonly organizationId: string;
  readonly fromEmail: string;
  readonly mime: Buffer;
  readonly recipients: readonly OpenRecipient[];
}

export interface RecipientOutcome {
  readonly id: string;
  readonly status: "delivered" | "deferred" | "bounced" | "failed";
  readonly response: string;
  readonly failureCode: string | null;
}

export interface QueuedState {
  readonly found: boolean;
  readonly createdAt: Date;
  /** Domains with recipients still open (queued or deferred). */
  readonly domains: string[];
}

export interface DeliveryStore {
  /** pending → queued for the submission (queueId set) and its pending recipients; lists the open domains. */
  queue(submissionId: string): Promise<QueuedState>;
  /** The attempt's input, or undefined when the submission is gone. Recipients: the domain's open ones. */
  attemptInput(submissionId: string, domain: string): Promise<AttemptInput | undefined>;
  /** Records outcomes of open recipients (final ones are left alone), suppresses hard bounces, re-aggregates. */
  record(submissionId: string, outcomes: readonly RecipientOutcome[], suppress: readonly { id: string; email: string; detail: string }[]): Promise<void>;
  /** The domain's open recipients fail with this code (the queue lifetime ran out). */
  failOpen(submissionId: string, domain: string, failureCode: string, response: string): Promise<void>;
}

interface Locked {
  id: string;
  organization_id: string;
  message_id: string | null;
  created_at_ms: number;
}

export function createDeliveryStore(db: Database): DeliveryStore {
  const lock = async (em: EntityManager, submissionId: string): Promise<Locked | undefined> => {
    const rows = await em.execute<Locked[]>(
      `select id, organization_id, message_id, (extract(epoch from created_at) * 1000)::float8 as created_at_ms
         from submissions where id = ? for update`,
      [submissionId],
    );
    return rows[0];
  };

  /** Recomputes the aggregate from the recipients and writes it to the submission and its mailbox message. */
  const reaggregate = async (em: EntityManager, submission: Locked, lastResponse: string | null, lastFailureCode: string | null) => {
    const recipients = await em.execute<{ status: string; failure_code: string | null }[]>(
      `select status, failure_code from submission_recipients where submission_id = ? order by position`,
      [submission.id],
    );
    const status: SubmissionStatus = aggregateStatus(recipients.map((r) => r.status));
    const failureCode = status === "failed" ? (lastFailureCode ?? recipients.find((r) => r.failure_code)?.failure_code ?? null) : null;
    await em.execute(
      `update submissions set status = ?, response = coalesce(?, response), failure_code = ?, updated_at = now() where id = ?`,
      [status, lastResponse, failureCode, submission.id],
    );
    if (submission.message_id !== null) {
      await em.execute(`update messages set delivery_status = ?, failure_code = ?, updated_at = now() where id = ?`, [
        messageDeliveryStatus(status),
        failureCode,
        submission.message_id,
      ]);
    }
  };

  return {
    async queue(submissionId) {
      return db.fork().transactional(async (em) => {
        const submission = await lock(em, submissionId);
        if (!submission) return { found: false, createdAt: new Date(0), domains: [] };
        await em.execute(
          `update submission_recipients set status = 'queued', updated_at = now() where submission_id = ? and status = 'pending'`,
          [submissionId],
        );
        await em.execute(`update submissions set queue_id = coalesce(queue_id, ?) where id = ?`, [queueIdOf(submissionId), submissionId]);
        await reaggregate(em, submission, null, null);
        const domains = await em.execute<{ domain: string }[]>(
          `select distinct domain from submission_recipients where submission_id = ? and status in ${OPEN} order by domain`,
          [submissionId],
        );
        return { found: true, createdAt: new Date(Number(submission.created_at_ms)), domains: domains.map((d) => d.domain) };
      });
    },

    async attemptInput(submissionId, domain) {
      const rows = await db.query<{ organization_id: string; from_email: string; mime: Buffer }>(
        `select organization_id, "from"->>'email' as from_email, mime from submissions where id = ?`,
        [submissionId],
      );
      const row = rows[0];
      if (!row) return undefined;
      const recipients = await db.query<OpenRecipient>(
        `select id, email from submission_recipients where submission_id = ? and domain = ? and status in ${OPEN} order by position`,
        [submissionId, domain],
      );
      return { submissionId, organizationId: row.organization_id, fromEmail: row.from_email, mime: Buffer.from(row.mime), recipients };
    },

    async record(submissionId, outcomes, suppress) {
      if (outcomes.length === 0) return;
      await db.fork().transactional(async (em) => {
        const submission = await lock(em, submissionId);
        if (!submission) return;
        const applied: RecipientOutcome[] = [];
        for (const o of outcomes) {
          const updated = await em.execute<{ id: string }[]>(
            `update submission_recipients
                set status = ?, response = ?, failure_code = ?, attempts = attempts + 1,
                    delivered_at = case when ? = 'delivered' then now() else delivered_at end, updated_at = now()
              where id = ? and submission_id = ? and status in ${OPEN} returning id`,
            [o.status, o.response, o.failureCode, o.status, o.id, submissionId],
          );
          if (updated.length > 0) applied.push(o);
        }
        // Every recipient was final already (a repeated attempt): nothing changes.
        if (applied.length === 0) return;
        for (const s of suppress.filter((x) => applied.some((o) => o.id === x.id))) {
          await em.execute(
            `insert into suppressions (id, organization_id, email, reason, detail, created_at)
             values (?, ?, ?, 'hard_bounce', ?, now()) on conflict (organization_id, email) do nothing`,
            [randomUUID(), submission.organization_id, s.email.toLowerCase(), s.detail],
          );
        }
        const last = applied[applied.length - 1]!;
        const lastFailure = [...applied].reverse().find((o) => o.status === "failed" || o.status === "bounced");
        await reaggregate(em, submission, last.response, lastFailure?.failureCode ?? null);
      });
    },

    async failOpen(submissionId, domain, failureCode, response) {
      await db.fork().transactional(async (em) => {
        const submission = await lock(em, submissionId);
        if (!submission) return;
        const failed = await em.execute<{ id: string }[]>(
          `update submission_recipients set status = 'failed', failure_code = ?,
                  response = coalesce(response, ?), updated_at = now()
            where submission_id = ? and domain = ? and status in ${OPEN} returning id`,
          [failureCode, response, submissionId, domain],
        );
        if (failed.length > 0) await reaggregate(em, submission, response, failureCode);
      });
    },
  };
}

/** Submissions committed at least `olderThanMs` ago that no delivery has picked up (still pending). */
export async function strandedSubmissions(
  db: Database,
  olderThanMs: number,
  limit: number,
): Promise<{ submissionId: string; organizationId: string; inboxId: string | null }[]> {
  const rows = await db.query<{ id: string; organization_id: string; inbox_id: string | null }>(
    `select id, organization_id, inbox_id from submissions
      where status = 'pending' and created_at < now() - make_interval(secs => ?)
      order by created_at limit ?`,
    [olderThanMs / 1000, limit],
  );
  return rows.map((r) => ({ submissionId: r.id, organizationId: r.organization_id, inboxId: r.inbox_id }));
}
