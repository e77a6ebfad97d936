// Activities of the inbox purge. Idempotent: re-running a batch deletes what is left, marking deleted twice is a no-op.
import type { Database } from "../../db/database.js";
import { Inbox } from "../../db/entities/index.js";

/**
 * Tables that hold an inbox's mail (each has an inbox_id column), purged in this order, children first. The inbox
 * row itself stays as a tombstone.
 */
export const MAILBOX_DATA_TABLES: readonly string[] = ["attachments", "messages", "threads"];

export function createInboxPurgeActivities(db: Database) {
  return {
    async purgeMailboxBatch(inboxId: string, batchSize: number): Promise<number> {
      const conn = db.fork().getConnection();
      for (const table of MAILBOX_DATA_TABLES) {
        const res = await conn.execute<{ affectedRows: number }>(
          `delete from ${table} where ctid in (select ctid from ${table} where inbox_id = ? limit ?)`,
          [inboxId, batchSize],
          "run",
        );
        if (res.affectedRows > 0) return res.affectedRows;
      }
      return 0;
    },

    async markInboxDeleted(inboxId: string): Promise<void> {
      const now = new Date();
      await db.fork().nativeUpdate(Inbox, { id: inboxId, status: "deleting" }, { status: "deleted", updatedAt: now });
    },
  };
}

export type InboxPurgeActivities = ReturnType<typeof createInboxPurgeActivities>;
