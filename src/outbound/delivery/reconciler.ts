// Submissions of this worker's task queue (or accepted before submissions recorded one) whose delivery may have no
// workflow: still pending 30 s after their commit (the announcement was lost, or no worker listened), or queued two
// minutes ago, never attempted and under no lease (claimed by a worker from before leases). A dead worker's leased
// claims are the delivery queue's to take over, within seconds (src/outbound/delivery/queue.ts). Starts are
// idempotent by workflow id (deliver/<submissionId>), so a delivery that is running is left be. Submissions of
// other task queues are other deployments' (staging beside production on one database): they deliver them through
// their own routes.
import type { Database } from "../../db/database.js";
import type { Reconciler } from "../../jobs/periodic-jobs.js";
import type { DeliveryStarter } from "./queue.js";

/** A submission still pending this long after its commit has lost its announcement (a claim takes milliseconds). */
export const STRANDED_AFTER_MS = 30_000;
/** A queued submission without a lease not attempted this long after its claim has lost its start (a first attempt ends in 60 s). */
export const UNSTARTED_AFTER_MS = 120_000;
/** Starts per round; the next round takes the rest. */
const BATCH = 500;

type StrandedSubmission = { submissionId: string; organizationId: string; inboxId: string | null };

export function deliveryReconciler(db: Database, taskQueue: string, starter: DeliveryStarter): Reconciler<StrandedSubmission> {
  return {
    name: "delivery",
    async stranded() {
      const rows = await db.sql.query<{ id: string; organization_id: string; inbox_id: string | null }>(
        `select id, organization_id, inbox_id from submissions s
          where (task_queue = $4 or task_queue is null)
            and ((status = 'pending' and created_at < now() - make_interval(secs => $1))
              or (status = 'queued' and claim_expires_at is null
                  and created_at < now() - make_interval(secs => $2) and updated_at < now() - make_interval(secs => $2)
                  and not exists (select 1 from submission_recipients r where r.submission_id = s.id and r.attempts > 0)))
          order by created_at limit $3`,
        [STRANDED_AFTER_MS / 1000, UNSTARTED_AFTER_MS / 1000, BATCH, taskQueue],
      );
      return rows.map((r) => ({ submissionId: r.id, organizationId: r.organization_id, inboxId: r.inbox_id }));
    },
    // Without `queued` the workflow queues the submission itself (a claimed one is queued already).
    start: (submission) => starter.start(submission),
  };
}
