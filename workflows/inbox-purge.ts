// Purges a deleted inbox's mailbox data in batches, then marks the inbox deleted. Batches keep each transaction
// short for a big mailbox; continue-as-new keeps the history bounded however many batches it takes.
import { continueAsNew, proxyActivities } from "@temporalio/workflow";
import type { InboxPurgeActivities } from "../src/temporal/activities/inbox-purge.js";
import type { InboxPurgeArgs, InboxPurgeResult } from "./types.js";

/** Database work is idempotent and retried until it succeeds; the backoff rides out a database restart. */
const PURGE_RETRY = { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "1m" } as const;
const BATCHES_PER_RUN = 200;

const activities = proxyActivities<InboxPurgeActivities>({ startToCloseTimeout: "2m", retry: PURGE_RETRY });

export async function inboxPurge(args: InboxPurgeArgs, deletedSoFar = 0): Promise<InboxPurgeResult> {
  let deletedRows = deletedSoFar;
  for (let batch = 0; batch < BATCHES_PER_RUN; batch++) {
    const deleted = await activities.purgeMailboxBatch(args.inboxId, args.batchSize);
    deletedRows += deleted;
    if (deleted === 0) {
      await activities.markInboxDeleted(args.inboxId);
      return { deletedRows };
    }
  }
  return continueAsNew<typeof inboxPurge>(args, deletedRows);
}
