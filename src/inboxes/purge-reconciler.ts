// The purge reconciler: starts the purge of a deleted inbox whose workflow may have been lost between the delete's
// commit and its start.
import type { Database } from "../db/database.js";
import { Inbox } from "../db/entities/index.js";
import { systemStore } from "../db/system-store.js";
import type { Reconciler } from "../jobs/periodic-jobs.js";
import type { InboxPurgeStarter } from "./inboxes.js";

/** Inboxes marked `deleting` (the delete committed) whose purge may not have started. */
export function purgeReconciler(db: Database, purges: InboxPurgeStarter): Reconciler<{ id: string; organizationId: string }> {
  return {
    name: "purge",
    async stranded() {
      const pending = await systemStore(db).find(Inbox, { status: "deleting" }, { fields: ["id", "organization"], limit: 1000 });
      return pending.map((inbox) => ({ id: inbox.id, organizationId: inbox.organization.id }));
    },
    start: (inbox) => purges.start(inbox),
  };
}
