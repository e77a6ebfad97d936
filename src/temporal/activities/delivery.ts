// Activities of the delivery workflow. Each is idempotent: queueing only moves pending rows, an attempt sends only
// to recipients that are not final yet, and expiring only fails recipients that are still open.
import { Context } from "@temporalio/activity";
import type { DeliveryOperations } from "../../outbound/delivery/operations.js";

export function createDeliveryActivities(operations: DeliveryOperations) {
  return {
    /** Marks the submission queued (queueId set, recipients pending → queued) and lists its open domains. */
    queueSubmission: (submissionId: string) => operations.queueSubmission(submissionId),
    /** One SMTP transaction to one recipient domain, for its recipients that are not final yet. */
    attemptDomain: (args: { submissionId: string; domain: string }) => {
      const context = Context.current();
      const local = context.info.isLocal;
      return operations.attemptDomain(args.submissionId, args.domain, {
        // A local activity has no heartbeat of its own: the worker keeps its workflow task alive.
        heartbeat: local ? () => undefined : () => context.heartbeat(),
        signal: context.cancellationSignal,
        first: local,
      });
    },
    /** The queue lifetime ran out: the domain's open recipients fail with queue_lifetime_exceeded. */
    expireDomain: (args: { submissionId: string; domain: string }) => operations.expireDomain(args.submissionId, args.domain),
  };
}

export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;
