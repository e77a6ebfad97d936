// Starts scans that have no run: attachments still `unscanned` a while after they were stored, because the process
// died between the message's commit and the workflow start, or Temporal was down. Starts join a running scan.
import type { Database } from "../db/database.js";
import type { AttachmentScanStarter } from "../inbound/ports.js";

/** Younger attachments are left to the inbound path, which starts their scan right after its commit. */
const GRACE_MS = 60_000;
/** Messages started per pass, oldest first; the next pass takes the rest. */
const BATCH = 500;

/** Starts the scan of every message with attachments stored before `storedBefore` and still unscanned. */
export async function reconcileAttachmentScans(
  db: Database,
  scans: AttachmentScanStarter,
  storedBefore = new Date(Date.now() - GRACE_MS),
): Promise<number> {
  const pending = await db.fork().getConnection().execute<{ message_id: string; inbox_id: string; organization_id: string }[]>(
    `select message_id, inbox_id, organization_id from attachments where scan_state = 'unscanned' and created_at < ?
     group by message_id, inbox_id, organization_id order by min(created_at) limit ?`,
    [storedBefore, BATCH],
    "all",
  );
  for (const row of pending) {
    await scans.start({ messageId: row.message_id, inboxId: row.inbox_id, organizationId: row.organization_id });
  }
  return pending.length;
}
