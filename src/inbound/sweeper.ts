// Finds raw messages that are still pending after a while (their process crashed after the 250, or its queue was
// full) and hands them to the processor, which claims each with FOR UPDATE SKIP LOCKED. After a crash, what the
// dead process had accepted is processed within staleAfterMs + intervalMs of the restart (or by any other smtp
// process); younger rows are left to the live process that accepted them.
//
// A sweep pages through the stale rows oldest first until the processor's queue is full, so a backlog larger than
// the queue drains as fast as the processor stores, not one page per interval; rows the processor already holds
// are passed over.
import type { Database } from "../db/database.js";
import type { Logger } from "../logger.js";
import type { InboundProcessor } from "./processor.js";

export interface SweeperOptions {
  readonly intervalMs: number;
  /** Rows younger than this are left to the process that accepted them. */
  readonly staleAfterMs: number;
}

export const DEFAULT_SWEEPER_OPTIONS: SweeperOptions = { intervalMs: 5000, staleAfterMs: 15_000 };

const PAGE = 500;

export function startInboundSweeper(
  db: Database,
  processor: Pick<InboundProcessor, "submit">,
  log: Logger,
  options: SweeperOptions,
): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();

  async function sweepOnce(): Promise<void> {
    const staleBefore = new Date(Date.now() - options.staleAfterMs);
    let after: { receivedAt: Date; id: string } | null = null;
    while (!stopped) {
      const rows: { id: string; received_at: Date; size: number }[] = await db.sql.query(
        `select id, received_at, size from inbound_raw_messages
          where status = 'pending' and received_at <= $1 and ($2::timestamptz is null or (received_at, id) > ($2, $3::uuid))
          order by received_at, id limit ${PAGE}`,
        [staleBefore, after?.receivedAt ?? null, after?.id ?? null],
      );
      for (const row of rows) if (!processor.submit(row.id, row.size)) return;
      if (rows.length < PAGE) return;
      const last = rows.at(-1)!;
      after = { receivedAt: last.received_at, id: last.id };
    }
  }

  let sweeping = false;
  const sweep = () => {
    if (sweeping) return; // the previous sweep is still paging
    sweeping = true;
    running = sweepOnce()
      .catch((error: unknown) => log.warn("inbound sweep failed", { error }))
      .finally(() => (sweeping = false));
  };
  sweep();
  const timer = setInterval(sweep, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
