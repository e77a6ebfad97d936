// Holds that may lack their workflow, or a workflow that missed its decision (src/outbound/delivery/holds.ts): the
// Reconciler shape of every sweeper (src/jobs/periodic-jobs.ts). Only submissions of this worker's task queue (or
// accepted before submissions recorded one), as the delivery reconciler: other queues' holds are other deployments'.
import type { SqlPool } from "../../db/database.js";
import type { Reconciler } from "../../jobs/periodic-jobs.js";
import type { HoldDecisionNotifier } from "../ports.js";
import { HELD_COLUMNS, heldOf, heldStart, type HeldRow, type HeldSubmission } from "./holds.js";
import type { DeliveryStarter } from "./queue.js";
import { STRANDED_AFTER_MS } from "./reconciler.js";

/** Starts per round; the next round takes the rest. */
const BATCH = 500;

export type StrandedHold = { readonly approved: false; readonly held: HeldSubmission } | { readonly approved: true; readonly submission: Omit<HeldSubmission, "heldReason" | "recipients"> };

/**
 * Holds that may lack their workflow, or a workflow that missed its decision: held submissions that entered no hold
 * 30 s after their commit (the announcement or the start was lost), and approved ones still pending 30 s after the
 * approval (the workflow was not told: the API died after the commit, or Temporal was down). Rejections need no
 * repair: nothing is sent for them, and a workflow not told ends at its hold's deadline.
 */
export function holdReconciler(sql: SqlPool, taskQueue: string, starter: DeliveryStarter, decisions: HoldDecisionNotifier): Reconciler<StrandedHold> {
  return {
    name: "hold",
    async stranded() {
      const rows = await sql.query<HeldRow & { approved: boolean }>(
        `select ${HELD_COLUMNS}, s.status = 'pending' as approved from submissions s
          where (s.task_queue = $3 or s.task_queue is null)
            and ((s.status = 'held' and s.queue_id is null and s.created_at < now() - make_interval(secs => $1))
              or (s.status = 'pending' and s.decided_at < now() - make_interval(secs => $1)))
          order by s.created_at limit $2`,
        [STRANDED_AFTER_MS / 1000, BATCH, taskQueue],
      );
      return rows.map((r) => (r.approved ? { approved: true, submission: { submissionId: r.id, organizationId: r.organization_id, inboxId: r.inbox_id } } : { approved: false, held: heldOf(r) }));
    },
    start: (row) => (row.approved ? decisions.decided(row.submission) : starter.start(heldStart(row.held))),
  };
}
