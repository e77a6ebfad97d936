// The delivery state in PostgreSQL, in plain SQL on the driver's pool (hot, small statements). Every change to recipients recomputes the
// submission's aggregate and mirrors it onto the mailbox message in the same transaction, under a row lock on the
// submission, so parallel domains of one submission never write a stale aggregate. Recipients that are final
// (delivered, bounced, failed) are never changed again: a repeated activity cannot undo or resend them.
import { randomUUID } from "node:crypto";
import type { Database, SqlTx } from "../../db/database.js";
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
  const lock = async (tx: SqlTx, submissionId: string): Promise<Locked | undefined> => {
    const rows = await tx.query<Locked>(
      `select id, organization_id, message_id, (extract(epoch from created_at) * 1000)::float8 as created_at_ms
         from submissions where id = $1 for update`,
      [submissionId],
    );
    return rows[0];
  };

  /** Recomputes the aggregate from the recipients and writes it to the submission and its mailbox message. */
  const reaggregate = async (tx: SqlTx, submission: Locked, lastResponse: string | null, lastFailureCode: string | null) => {
    const recipients = await tx.query<{ status: string; failure_code: string | null }>(
      `select status, failure_code from submission_recipients where submission_id = $1 order by position`,
      [submission.id],
    );
    const status: SubmissionStatus = aggregateStatus(recipients.map((r) => r.status));
    const failureCode = status === "failed" ? (lastFailureCode ?? recipients.find((r) => r.failure_code)?.failure_code ?? null) : null;
    await tx.query(
      `update submissions set status = $1, response = coalesce($2, response), failure_code = $3, updated_at = now() where id = $4`,
      [status, lastResponse, failureCode, submission.id],
    );
    if (submission.message_id !== null) {
      await tx.query(`update messages set delivery_status = $1, failure_code = $2, updated_at = now() where id = $3`, [
        messageDeliveryStatus(status),
        failureCode,
        submission.message_id,
      ]);
    }
  };

  return {
    async queue(submissionId) {
      return db.sql.transaction(async (tx) => {
        const submission = await lock(tx, submissionId);
        if (!submission) return { found: false, createdAt: new Date(0), domains: [] };
        await tx.query(
          `update submission_recipients set status = 'queued', updated_at = now() where submission_id = $1 and status = 'pending'`,
          [submissionId],
        );
        await tx.query(`update submissions set queue_id = coalesce(queue_id, $1) where id = $2`, [queueIdOf(submissionId), submissionId]);
        await reaggregate(tx, submission, null, null);
        const domains = await tx.query<{ domain: string }>(
          `select distinct domain from submission_recipients where submission_id = $1 and status in ${OPEN} order by domain`,
          [submissionId],
        );
        return { found: true, createdAt: new Date(Number(submission.created_at_ms)), domains: domains.map((d) => d.domain) };
      });
    },

    async attemptInput(submissionId, domain) {
      const rows = await db.sql.query<{ organization_id: string; from_email: string; mime: Buffer }>(
        `select organization_id, "from"->>'email' as from_email, mime from submissions where id = $1`,
        [submissionId],
      );
      const row = rows[0];
      if (!row) return undefined;
      const recipients = await db.sql.query<OpenRecipient>(
        `select id, email from submission_recipients where submission_id = $1 and domain = $2 and status in ${OPEN} order by position`,
        [submissionId, domain],
      );
      return { submissionId, organizationId: row.organization_id, fromEmail: row.from_email, mime: Buffer.from(row.mime), recipients };
    },

    async record(submissionId, outcomes, suppress) {
      if (outcomes.length === 0) return;
      await db.sql.transaction(async (tx) => {
        const submission = await lock(tx, submissionId);
        if (!submission) return;
        const applied: RecipientOutcome[] = [];
        for (const o of outcomes) {
          const updated = await tx.query<{ id: string }>(
            `update submission_recipients
                set status = $1, response = $2, failure_code = $3, attempts = attempts + 1,
                    delivered_at = case when $4 = 'delivered' then now() else delivered_at end, updated_at = now()
              where id = $5 and submission_id = $6 and status in ${OPEN} returning id`,
            [o.status, o.response, o.failureCode, o.status, o.id, submissionId],
          );
          if (updated.length > 0) applied.push(o);
        }
        // Every recipient was final already (a repeated attempt): nothing changes.
        if (applied.length === 0) return;
        for (const s of suppress.filter((x) => applied.some((o) => o.id === x.id))) {
          await tx.query(
            `insert into suppressions (id, organization_id, email, reason, detail, created_at)
             values ($1, $2, $3, 'hard_bounce', $4, now()) on conflict (organization_id, email) do nothing`,
            [randomUUID(), submission.organization_id, s.email.toLowerCase(), s.detail],
          );
        }
        const last = applied[applied.length - 1]!;
        const lastFailure = [...applied].reverse().find((o) => o.status === "failed" || o.status === "bounced");
        await reaggregate(tx, submission, last.response, lastFailure?.failureCode ?? null);
      });
    },

    async failOpen(submissionId, domain, failureCode, response) {
      await db.sql.transaction(async (tx) => {
        const submission = await lock(tx, submissionId);
        if (!submission) return;
        const failed = await tx.query<{ id: string }>(
          `update submission_recipients set status = 'failed', failure_code = $1,
                  response = coalesce(response, $2), updated_at = now()
            where submission_id = $3 and domain = $4 and status in ${OPEN} returning id`,
          [failureCode, response, submissionId, domain],
        );
        if (failed.length > 0) await reaggregate(tx, submission, response, failureCode);
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
  const rows = await db.sql.query<{ id: string; organization_id: string; inbox_id: string | null }>(
    `select id, organization_id, inbox_id from submissions
      where status = 'pending' and created_at < now() - make_interval(secs => $1)
      order by created_at limit $2`,
    [olderThanMs / 1000, limit],
  );
  return rows.map((r) => ({ submissionId: r.id, organizationId: r.organization_id, inboxId: r.inbox_id }));
}
