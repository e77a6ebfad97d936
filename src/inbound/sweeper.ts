// Finds raw messages that are still pending after a while (their process crashed after the 250, or its queue was
// full) and hands them to the processor, which claims each with FOR UPDATE SKIP LOCKED. After a crash, what the
// dead process had accepted is processed within staleAfterMs + intervalMs of the restart (or by any other smtp
// process); younger rows are left to the live process that accepted them.
import type { Database } from "../db/database.js";
import { InboundRawMessage } from "../db/entities/index.js";
import type { Logger } from "../logger.js";
import type { InboundProcessor } from "./processor.js";

export interface SweeperOptions {
  readonly intervalMs: number;
  /** Rows younger than this are left to the process that accepted them. */
  readonly staleAfterMs: number;
}

export const DEFAULT_SWEEPER_OPTIONS: SweeperOptions = { intervalMs: 5000, staleAfterMs: 15_000 };

const BATCH = 200;

export function startInboundSweeper(
  db: Database,
  processor: InboundProcessor,
  log: Logger,
  options: SweeperOptions,
): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const sweep = () => {
    running = pendingRawIds(db, options.staleAfterMs).then(
      (ids) => ids.forEach((id) => processor.submit(id)),
      (error: unknown) => log.warn("inbound sweep failed", { error }),
    );
  };
  sweep();
  const timer = setInterval(sweep, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

async function pendingRawIds(db: Database, staleAfterMs: number): Promise<string[]> {
  const rows = await db
    .fork()
    .find(
      InboundRawMessage,
      { status: "pending", receivedAt: { $lte: new Date(Date.now() - staleAfterMs) } },
      { fields: ["id"], orderBy: { receivedAt: "asc" }, limit: BATCH },
    );
  return rows.map((r) => r.id);
}
