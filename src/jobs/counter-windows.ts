// Counter windows that ended: the rate limiter and the send limits add a row per window, and a periodic job of the
// worker deletes them once they are over.
import type { Database } from "../db/database.js";
import { pruneRequestWindows } from "../interceptors/rate-limit.js";
import { pruneSendWindows } from "../outbound/send-limits.js";

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
