// Starts scans that have no run: attachments still `unscanned` a while after they were stored, because the process
// died between the message's commit and the workflow start, or Temporal was down. Starts join a running scan.
import type { Database } from "../db/database.js";
import type { AttachmentScanStarter } from "../inbound/ports.js";
import type { Reconciler } from "../jobs/periodic-jobs.js";

/** Younger attachments are left to the inbound path, which starts their scan right after its commit. */
const GRACE_MS = 60_000;
/** Messages started per pass, oldest first; the next pass takes the rest. */
const BATCH = 500;

type UnscannedMessage = { messageId: string; inboxId: string; organizationId: string };

/** Messages with attachments stored more than GRACE_MS before `now()` and still unscanned. */
export function attachmentScanReconciler(db: Database, scans: AttachmentScanStarter, now: () => Date = () => new Date()): Reconciler<UnscannedMessage> {
  return {
    name: "attachment scan",
    async stranded() {
      const rows = await db.sql.query<{ message_id: string; inbox_id: string; organization_id: string }>(
        `select message_id, inbox_id, organization_id from attachments where scan_state = 'unscanned' and created_at < $1
         group by message_id, inbox_id, organization_id order by min(created_at) limit $2`,
        [new Date(now().getTime() - GRACE_MS), BATCH],
      );
      return rows.map((row) => ({ messageId: row.message_id, inboxId: row.inbox_id, organizationId: row.organization_id }));
    },
    start: (message) => scans.start(message),
  };
}
