// The worker's periodic jobs: the one loop they all run in (startPeriodicJobs), and the one shape of a reconciler.
// A reconciler finds rows whose workflow may have been lost — the start failed (Temporal down) or the process died
// between the commit and the start — and starts it through a port of its domain: starts are idempotent by workflow
// id, so a workflow that runs is left be. Reconcilers of this service: inbox purge (src/inboxes), delivery
// (src/outbound/delivery/reconciler.ts), attachment scan (src/scanning), webhook delivery (src/webhooks/deliveries.ts),
// domain verification (src/domains). Beside them runs the pruning of counter windows that ended (counter-windows.ts).
import type { Logger } from "../logger.js";

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
