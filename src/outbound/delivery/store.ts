// The delivery state in PostgreSQL, in plain SQL on the driver's pool (hot, small statements). Every change to
// recipients recomputes the submission's aggregate and mirrors it onto the mailbox message in the same transaction,
// under a row lock on the submission, so parallel domains of one submission never write a stale aggregate.
// Recipients that are final (delivered, bounced, failed) are never changed again: a repeated activity cannot undo
// or resend them. The statements per message are few on purpose (bench:outbound counted them): a claim queues many
// submissions and reads what their first attempts send in one statement, and an attempt records its outcome in
// three. Each function takes the pool it runs on; the dispatcher and the deliverer call them directly.
//
// A claim is a lease (claim_expires_at): the claiming worker renews it while it holds the submission without a
// workflow, and clears it once the submission is final or its workflow has started; a lease that runs out (the
// worker died) is taken over by another worker of the task queue, which starts the workflow.
import type { SqlPool, SqlTx } from "../../db/database.js";
import { suppressFrom } from "../../db/tables/suppressions.js";
import { aggregateStatus, isFinalRecipientStatus, messageDeliveryStatus, queueIdOf, type SubmissionStatus } from "./aggregate.js";

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
  /** When the send was accepted (the submission's creation). */
  readonly acceptedAt: Date;
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

/** A submission the delivery queue claimed (pending → queued), with what its first attempts send. */
export interface ClaimedSubmission {
  readonly submissionId: string;
  readonly organizationId: string;
  readonly inboxId: string | null;
  readonly createdAt: Date;
  /** Its recipients' domains, in order. */
  readonly domains: string[];
  readonly fromEmail: string;
  /** The stored bytes; undefined when larger than the claim carries (MIME_IN_CLAIM_BYTES): the attempt reads them. */
  readonly mime: Buffer | undefined;
  /** Its recipients, in order. */
  readonly recipients: readonly ClaimedRecipient[];
}

export interface ClaimedRecipient extends OpenRecipient {
  readonly domain: string;
}

/** A submission whose lease ran out: its workflow is to be started. */
export interface ExpiredClaim {
  readonly submissionId: string;
  readonly organizationId: string;
  readonly inboxId: string | null;
}

/** Bytes a claim reads with each submission at most: a batch of claims stays a few MiB however large the mail. */
export const MIME_IN_CLAIM_BYTES = 128 * 1024;

interface Locked {
  id: string;
  organization_id: string;
  message_id: string | null;
  /** When the queue lifetime starts: the acceptance, or a held send's decision (its wait is not its delivery's). */
  created_at_ms: number;
}

async function lockSubmission(tx: SqlTx, submissionId: string): Promise<Locked | undefined> {
  const rows = await tx.query<Locked>(
    `select id, organization_id, message_id, (extract(epoch from coalesce(decided_at, created_at)) * 1000)::float8 as created_at_ms
       from submissions where id = $1 for update`,
    [submissionId],
  );
  return rows[0];
}

/**
 * Writes the aggregate of the recipients' states to the submission and its mailbox message, in one statement; a
 * submission with every recipient final leaves the delivery queue's lease.
 */
async function writeAggregate(
  tx: SqlTx,
  submission: Locked,
  recipients: readonly { status: string; failure_code: string | null }[],
  lastResponse: string | null,
  lastFailureCode: string | null,
): Promise<void> {
  const status: SubmissionStatus = aggregateStatus(recipients.map((r) => r.status));
  const failureCode = status === "failed" ? (lastFailureCode ?? recipients.find((r) => r.failure_code)?.failure_code ?? null) : null;
  const final = recipients.every((r) => isFinalRecipientStatus(r.status));
  await tx.query(
    `with s as (update submissions set status = $1, response = coalesce($2, response), failure_code = $3, updated_at = now(),
                       claim_expires_at = case when $7 then null else claim_expires_at end where id = $4)
     update messages set delivery_status = $5, failure_code = $3, updated_at = now() where id = $6`,
    [status, lastResponse, failureCode, submission.id, messageDeliveryStatus(status), submission.message_id, final],
  );
}

/** Recomputes the aggregate from the recipients as they are now and writes it. */
async function reaggregate(tx: SqlTx, submission: Locked, lastResponse: string | null, lastFailureCode: string | null): Promise<void> {
  const recipients = await tx.query<{ status: string; failure_code: string | null }>(
    `select status, failure_code from submission_recipients where submission_id = $1 order by position`,
    [submission.id],
  );
  await writeAggregate(tx, submission, recipients, lastResponse, lastFailureCode);
}

/**
 * pending → queued for those of the submissions that are still pending (queueId set, leased for `leaseMs`), their
 * recipients and mailbox messages, in one statement; answers the ones it queued with what their attempts send. A
 * held send that was approved (pending, decided) is its workflow's to deliver, never claimed.
 */
export async function claimSubmissions(sql: SqlPool, submissionIds: readonly string[], leaseMs: number): Promise<ClaimedSubmission[]> {
  if (submissionIds.length === 0) return [];
  // A pending submission has only pending recipients, so its aggregate becomes queued, as its message's status.
  const rows = await sql.query<{
    id: string;
    organization_id: string;
    inbox_id: string | null;
    created_at_ms: number;
    from_email: string;
    mime: Buffer | null;
    recipients: ClaimedRecipient[];
  }>(
    `with s as (
       update submissions s set status = 'queued', queue_id = coalesce(s.queue_id, v.queue_id), updated_at = now(),
              claim_expires_at = now() + make_interval(secs => $3)
         from unnest($1::uuid[], $2::text[]) as v(id, queue_id)
        where s.id = v.id and s.status = 'pending' and s.decided_at is null
       returning s.id, s.organization_id, s.inbox_id, s.message_id, s.created_at, s."from"->>'email' as from_email,
                 case when octet_length(s.mime) <= $4 then s.mime end as mime),
     r as (
       update submission_recipients r set status = 'queued', updated_at = now()
         from s where r.submission_id = s.id and r.status = 'pending'
       returning r.submission_id, r.id, r.email, r.domain, r.position),
     m as (
       update messages m set delivery_status = 'queued', updated_at = now()
         from s where m.id = s.message_id and m.delivery_status = 'submitted')
     select s.id, s.organization_id, s.inbox_id, (extract(epoch from s.created_at) * 1000)::float8 as created_at_ms, s.from_email, s.mime,
            coalesce((select json_agg(json_build_object('id', r.id, 'email', r.email, 'domain', r.domain) order by r.position)
                        from r where r.submission_id = s.id), '[]') as recipients
       from s`,
    [submissionIds, submissionIds.map(queueIdOf), leaseMs / 1000, MIME_IN_CLAIM_BYTES],
  );
  return rows.map((r) => ({
    submissionId: r.id,
    organizationId: r.organization_id,
    inboxId: r.inbox_id,
    createdAt: new Date(Number(r.created_at_ms)),
    domains: [...new Set(r.recipients.map((x) => x.domain))].sort(),
    fromEmail: r.from_email,
    mime: r.mime ?? undefined,
    recipients: r.recipients,
  }));
}

/** Submissions of the task queue still pending (approved holds aside: their workflows'), oldest first: announced while no worker listened. */
export async function pendingSubmissionIds(sql: SqlPool, taskQueue: string, limit: number): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `select id from submissions where status = 'pending' and decided_at is null and task_queue = $1 order by created_at limit $2`,
    [taskQueue, limit],
  );
  return rows.map((r) => r.id);
}

/** Extends the leases of these claims (a worker still holds them); a cleared lease stays cleared. */
export async function renewClaims(sql: SqlPool, submissionIds: readonly string[], leaseMs: number): Promise<void> {
  if (submissionIds.length === 0) return;
  await sql.query(
    `update submissions set claim_expires_at = now() + make_interval(secs => $2) where id = any($1::uuid[]) and claim_expires_at is not null`,
    [submissionIds, leaseMs / 1000],
  );
}

/** The workflows of these claims have started (or they are final): their leases end. */
export async function releaseClaims(sql: SqlPool, submissionIds: readonly string[]): Promise<void> {
  if (submissionIds.length === 0) return;
  await sql.query(`update submissions set claim_expires_at = null where id = any($1::uuid[]) and claim_expires_at is not null`, [submissionIds]);
}

/**
 * Takes over up to `limit` claims of the task queue whose lease ran out (their worker died before it finished or
 * started a workflow): leased anew to the caller, which starts their workflows. Workers taking over at once take
 * different ones (skip locked).
 */
export async function takeOverExpiredClaims(sql: SqlPool, taskQueue: string, leaseMs: number, limit: number): Promise<ExpiredClaim[]> {
  const rows = await sql.query<{ id: string; organization_id: string; inbox_id: string | null }>(
    `update submissions s set claim_expires_at = now() + make_interval(secs => $2)
      where s.id in (select id from submissions where task_queue = $1 and claim_expires_at < now()
                      order by claim_expires_at limit $3 for update skip locked)
      returning s.id, s.organization_id, s.inbox_id`,
    [taskQueue, leaseMs / 1000, limit],
  );
  return rows.map((r) => ({ submissionId: r.id, organizationId: r.organization_id, inboxId: r.inbox_id }));
}

/** pending → queued for the submission (queueId set) and its pending recipients; lists the open domains. */
export function queueSubmission(sql: SqlPool, submissionId: string): Promise<QueuedState> {
  return sql.transaction(async (tx) => {
    const submission = await lockSubmission(tx, submissionId);
    if (!submission) return { found: false, createdAt: new Date(0), domains: [] };
    await tx.query(`update submission_recipients set status = 'queued', updated_at = now() where submission_id = $1 and status = 'pending'`, [
      submissionId,
    ]);
    await tx.query(`update submissions set queue_id = coalesce(queue_id, $1) where id = $2`, [queueIdOf(submissionId), submissionId]);
    await reaggregate(tx, submission, null, null);
    const domains = await tx.query<{ domain: string }>(
      `select distinct domain from submission_recipients where submission_id = $1 and status in ${OPEN} order by domain`,
      [submissionId],
    );
    return { found: true, createdAt: new Date(Number(submission.created_at_ms)), domains: domains.map((d) => d.domain) };
  });
}

/** The attempt's input, or undefined when the submission is gone. Recipients: the domain's open ones. */
export async function readAttemptInput(sql: SqlPool, submissionId: string, domain: string): Promise<AttemptInput | undefined> {
  const rows = await sql.query<{ organization_id: string; from_email: string; created_at_ms: number; mime: Buffer; recipients: OpenRecipient[] }>(
    `select organization_id, "from"->>'email' as from_email, (extract(epoch from created_at) * 1000)::float8 as created_at_ms, mime,
            coalesce((select json_agg(json_build_object('id', r.id, 'email', r.email) order by r.position) from submission_recipients r
                       where r.submission_id = s.id and r.domain = $2 and r.status in ${OPEN}), '[]') as recipients
       from submissions s where id = $1`,
    [submissionId, domain],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    submissionId,
    organizationId: row.organization_id,
    fromEmail: row.from_email,
    acceptedAt: new Date(Number(row.created_at_ms)),
    mime: Buffer.from(row.mime),
    recipients: row.recipients,
  };
}

/** The stored bytes of a submission (a claim carries them only up to MIME_IN_CLAIM_BYTES); undefined when it is gone. */
export async function readMime(sql: SqlPool, submissionId: string): Promise<Buffer | undefined> {
  const rows = await sql.query<{ mime: Buffer }>(`select mime from submissions where id = $1`, [submissionId]);
  return rows[0] ? Buffer.from(rows[0].mime) : undefined;
}

/** A hard-bounced recipient to suppress: its recipient id, address and the bounce's detail. */
export interface BouncedRecipient {
  readonly id: string;
  readonly email: string;
  readonly detail: string;
}

/** Records outcomes of open recipients (final ones are left alone), suppresses hard bounces, re-aggregates. */
export function recordOutcomes(sql: SqlPool, submissionId: string, outcomes: readonly RecipientOutcome[], suppress: readonly BouncedRecipient[]): Promise<void> {
  if (outcomes.length === 0) return Promise.resolve();
  return sql.transaction(async (tx) => {
    const submission = await lockSubmission(tx, submissionId);
    if (!submission) return;
    const rows = await applyOutcomes(tx, submission, outcomes, suppress);
    const applied = new Set(rows.filter((r) => r.applied).map((r) => r.id));
    // Every recipient was final already (a repeated attempt): nothing changes.
    if (applied.size === 0) return;
    const done = outcomes.filter((o) => applied.has(o.id));
    const last = done[done.length - 1]!;
    const lastFailure = [...done].reverse().find((o) => o.status === "failed" || o.status === "bounced");
    await writeAggregate(tx, submission, rows, last.response, lastFailure?.failureCode ?? null);
  });
}

/**
 * Only open recipients change; the hard bounces among them are suppressed; every recipient's state after the change
 * comes back for the aggregate. One statement, read after the lock (a fresh snapshot).
 */
async function applyOutcomes(tx: SqlTx, submission: Locked, outcomes: readonly RecipientOutcome[], suppress: readonly BouncedRecipient[]) {
  const bounced = new Map(suppress.map((x) => [x.id, x]));
  const suppressBounced = suppressFrom(
    { organizationId: "$8", email: "v.suppress_email", reason: "'hard_bounce'", detail: "v.suppress_detail", createdAt: "now()" },
    "v join applied a on a.id = v.id where v.suppress_email is not null",
  );
  return tx.query<{ id: string; status: string; failure_code: string | null; applied: boolean }>(
    `with v as (
       select * from unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
         as v(id, status, response, failure_code, suppress_email, suppress_detail)),
     applied as (
       update submission_recipients r
          set status = v.status, response = v.response, failure_code = v.failure_code, attempts = r.attempts + 1,
              delivered_at = case when v.status = 'delivered' then now() else r.delivered_at end, updated_at = now()
         from v where r.id = v.id and r.submission_id = $1 and r.status in ${OPEN}
       returning r.id),
     suppressed as (${suppressBounced})
     select r.id, coalesce(v.status, r.status) as status, case when a.id is null then r.failure_code else v.failure_code end as failure_code,
            a.id is not null as applied
       from submission_recipients r left join applied a on a.id = r.id left join v on v.id = a.id
      where r.submission_id = $1 order by r.position`,
    [
      submission.id,
      outcomes.map((o) => o.id),
      outcomes.map((o) => o.status),
      outcomes.map((o) => o.response),
      outcomes.map((o) => o.failureCode),
      outcomes.map((o) => bounced.get(o.id)?.email.toLowerCase() ?? null),
      outcomes.map((o) => bounced.get(o.id)?.detail ?? null),
      submission.organization_id,
    ],
  );
}

/** The domain's open recipients fail with this code (the queue lifetime ran out). */
export function failOpenRecipients(sql: SqlPool, submissionId: string, domain: string, failureCode: string, response: string): Promise<void> {
  return sql.transaction(async (tx) => {
    const submission = await lockSubmission(tx, submissionId);
    if (!submission) return;
    const failed = await tx.query<{ id: string }>(
      `update submission_recipients set status = 'failed', failure_code = $1,
              response = coalesce(response, $2), updated_at = now()
        where submission_id = $3 and domain = $4 and status in ${OPEN} returning id`,
      [failureCode, response, submissionId, domain],
    );
    if (failed.length > 0) await reaggregate(tx, submission, response, failureCode);
  });
}
