// Activities of a held submission's delivery workflow (workflows/delivery-story.ts): enter the hold, settle it. Both
// idempotent: entering sets the queue id once; settling reads the decision, and expires only a row still held.
import type { HoldOperations } from "../../outbound/delivery/holds.js";

export function createHoldActivities(operations: HoldOperations) {
  return {
    /** The submission enters the hold queue; answers where it stands and until when it may wait. */
    enterHold: (submissionId: string) => operations.enterHold(submissionId),
    /** Where the hold stands now; with expire (its deadline passed), a submission still held is rejected as hold_expired. */
    settleHold: (args: { submissionId: string; expire: boolean }) => operations.settleHold(args.submissionId, args.expire),
  };
}

export type HoldActivities = ReturnType<typeof createHoldActivities>;
