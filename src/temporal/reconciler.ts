// Starts purges that have no run: an inbox marked `deleting` whose workflow start failed (Temporal down, process
// killed between commit and start). Starts are idempotent by workflow id, so a purge already running is left be.
import type { Database } from "../db/database.js";
import { Inbox } from "../db/entities/index.js";
import type { InboxPurgeStarter } from "../inboxes/inboxes.js";
import type { Logger } from "../logger.js";

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
