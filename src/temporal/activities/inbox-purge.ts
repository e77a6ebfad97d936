// Activities of the inbox purge. Idempotent: re-running a batch deletes what is left, marking deleted twice is a no-op.
import type { Database } from "../../db/database.js";
import { Inbox } from "../../db/entities/index.js";

/**
 * What holds an inbox's mail, purged in this order, children first: each entry selects the rows of one inbox. Raw
 * inbound messages kept after a parse failure go too when they were addressed to this inbox alone (a raw message
 * for several inboxes is also the other recipients' mail). Idempotency records stay: a send retried after the purge
 * answers 410 instead of sending again. The inbox row itself stays as a tombstone.
 */
export const MAILBOX_DATA: readonly { table: string; where: string; key?: string }[] = [
  { table: "attachments", where: "inbox_id = ?" },
  { table: "messages", where: "inbox_id = ?" },
  { table: "threads", where: "inbox_id = ?" },
  // Submissions hold the composed message: they go with the mailbox (a delivery still running then ends).
  { table: "submission_recipients", where: "submission_id in (select id from submissions where inbox_id = ?)" },
  { table: "submissions", where: "inbox_id = ?" },
  { table: "inbound_raw_messages", where: "inbox_ids = array[?]::text[]" },
  // Who the inbox exchanged mail with (the hold policies' memory); never updated, so its rows go by ctid.
  { table: "contacts", key: "ctid", where: "own_address = (select address from inboxes where id = ?)" },
  // Its sender rules would apply to nothing more.
  { table: "sender_rules", where: "inbox_id = ?" },
];

export function createInboxPurgeActivities(db: Database) {
  return {
    async purgeMailboxBatch(inboxId: string, batchSize: number): Promise<number> {
      const conn = db.fork().getConnection();
      for (const { table, where, key = "id" } of MAILBOX_DATA) {
        // By primary key, not ctid: a row a running delivery updates meanwhile gets a new ctid, and a delete by the
        // old one would skip it and let the purge move on to its parent (an orphaned recipient row).
        const res = await conn.execute<{ affectedRows: number }>(
          `delete from ${table} where ${key} in (select ${key} from ${table} where ${where} limit ?)`,
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
