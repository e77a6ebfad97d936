// The worker's periodic jobs: the one loop they all run in (startReconciler), and the jobs without a home of their
// own. Purges that have no run: an inbox marked `deleting` whose workflow start failed (Temporal down, process
// killed between commit and start); starts are idempotent by workflow id, so a purge already running is left be.
// Counter windows that ended: the rate limiter and the send limits add a row per key or organization and window.
import type { Database } from "../db/database.js";
import { Inbox } from "../db/entities/index.js";
import type { InboxPurgeStarter } from "../inboxes/inboxes.js";
import { pruneRequestWindows } from "../interceptors/rate-limit.js";
import type { Logger } from "../logger.js";
import { pruneSendWindows } from "../outbound/send-limits.js";

const INTERVAL_MS = 60_000;

export function startPurgeReconciler(db: Database, purges: InboxPurgeStarter, log: Logger): { stop(): Promise<void> } {
  return startReconciler("purge", () => reconcilePurges(db, purges), log);
}

/** Runs one reconciliation now and then every minute until stopped; a failed round is logged and tried next time. */
export function startReconciler(name: string, reconcile: () => Promise<unknown>, log: Logger): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = reconcile().then(
      () => undefined,
      (e: unknown) => log.warn(`${name} reconciliation failed`, { error: e }),
    );
  };
  tick();
  const timer = setInterval(tick, INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

export async function reconcilePurges(db: Database, purges: InboxPurgeStarter): Promise<number> {
  const pending = await db.fork().find(Inbox, { status: "deleting" }, { fields: ["id", "organization"], limit: 1000 });
  for (const inbox of pending) await purges.start({ id: inbox.id, organizationId: inbox.organization.id });
  return pending.length;
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
