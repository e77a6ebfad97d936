// The worker's periodic jobs: the one loop they all run in (startPeriodicJobs), and the one shape of a reconciler.
// A reconciler finds rows whose workflow may have been lost — the start failed (Temporal down) or the process died
// between the commit and the start — and starts it: starts are idempotent by workflow id, so a workflow that runs
// is left be. Reconcilers of this service: purge (here), delivery (src/outbound/delivery/reconciler.ts), attachment
// scan (src/scanning), webhook delivery (src/webhooks/deliveries.ts), domain verification (src/domains). Beside them
// runs the pruning of counter windows that ended (the rate limiter and the send limits add rows per window).
import type { Database } from "../db/database.js";
import { Inbox } from "../db/entities/index.js";
import type { InboxPurgeStarter } from "../inboxes/inboxes.js";
import { pruneRequestWindows } from "../interceptors/rate-limit.js";
import type { Logger } from "../logger.js";
import { pruneSendWindows } from "../outbound/send-limits.js";

const INTERVAL_MS = 60_000;

export interface Reconciler<T> {
  readonly name: string;
  /** Rows that may lack their workflow, oldest first, at most a batch: the next round takes the rest. */
  stranded(): Promise<readonly T[]>;
  /** Starts the workflow of one (or finds it running). */
  start(row: T): Promise<void>;
}

/**
 * One round: starts the workflow of every stranded row. A start that fails is counted and the others go on; the
 * round then fails with the first error (logged by the loop), and the next round tries them again. Answers how
 * many were started.
 */
export async function reconcile<T>(reconciler: Reconciler<T>): Promise<number> {
  const rows = await reconciler.stranded();
  let started = 0;
  let failure: { error: unknown; count: number } | undefined;
  for (const row of rows) {
    try {
      await reconciler.start(row);
      started++;
    } catch (error) {
      failure = { error: failure?.error ?? error, count: (failure?.count ?? 0) + 1 };
    }
  }
  if (failure) throw new Error(`${failure.count} of ${rows.length} starts failed`, { cause: failure.error });
  return started;
}

/** A job of the worker: a reconciler's round, or any other periodic work. */
export interface PeriodicJob {
  readonly name: string;
  run(): Promise<unknown>;
}

export function reconcilerJob<T>(reconciler: Reconciler<T>): PeriodicJob {
  return { name: `${reconciler.name} reconciliation`, run: () => reconcile(reconciler) };
}

/** Runs each job now and then every minute until stopped; a failed round is logged and tried next time. */
export function startPeriodicJobs(jobs: readonly PeriodicJob[], log: Logger): { stop(): Promise<void> } {
  const running = new Map<PeriodicJob, Promise<void>>();
  const tick = () => {
    for (const job of jobs) {
      // A round still running (a slow Temporal) is not joined by another.
      if (running.has(job)) continue;
      running.set(
        job,
        job
          .run()
          .then(
            () => undefined,
            (e: unknown) => log.warn(`${job.name} failed`, { error: e }),
          )
          .finally(() => running.delete(job)),
      );
    }
  };
  tick();
  const timer = setInterval(tick, INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(running.values());
    },
  };
}

/** Inboxes marked `deleting` (the delete committed) whose purge may not have started. */
export function purgeReconciler(db: Database, purges: InboxPurgeStarter): Reconciler<{ id: string; organizationId: string }> {
  return {
    name: "purge",
    async stranded() {
      const pending = await db.fork().find(Inbox, { status: "deleting" }, { fields: ["id", "organization"], limit: 1000 });
      return pending.map((inbox) => ({ id: inbox.id, organizationId: inbox.organization.id }));
    },
    start: (inbox) => purges.start(inbox),
  };
}

/** Windows are pruned once they ended this long ago: the clocks of the processes that count may differ a little. */
const WINDOW_GRACE_MS = 60_000;
/** Batches per table and round: a backlog larger than this goes in the rounds after. */
export const MAX_PRUNE_BATCHES = 100;

/** Deletes ended request and send windows, in statements of at most `batchSize` rows; returns how many went. */
export async function pruneCounterWindows(db: Database, options: { now?: Date; batchSize?: number } = {}): Promise<number> {
  const before = new Date((options.now ?? new Date()).getTime() - WINDOW_GRACE_MS);
  const batchSize = options.batchSize ?? 1000;
  let pruned = 0;
  for (const prune of [pruneRequestWindows, pruneSendWindows]) {
    for (let batch = 0; batch < MAX_PRUNE_BATCHES; batch++) {
      const n = await prune(db.sql, before, batchSize);
      pruned += n;
      if (n < batchSize) break;
    }
  }
  return pruned;
}
