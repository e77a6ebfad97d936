// Activities of the delivery workflow. Each is idempotent: queueing only moves pending rows, an attempt sends only
// to recipients that are not final yet, and expiring only fails recipients that are still open.
import { Context } from "@temporalio/activity";
import type { DomainAttemptResult, QueuedSubmission } from "../../../workflows/delivery.js";

/** What an attempt gets from its activity. */
export interface AttemptContext {
  /** Called every few seconds while the attempt runs. */
  heartbeat(): void;
  /** Aborted when the activity is cancelled (or timed out): the attempt ends where it is. */
  readonly signal: AbortSignal;
  /** A first attempt (a local activity): bounded to a short budget, its end reported to the delivery queue. */
  readonly first: boolean;
}

/** What the activities need from the outbound delivery code (createDeliveryOperations in src/outbound/delivery). */
export interface DeliveryOperations {
  queueSubmission(submissionId: string): Promise<QueuedSubmission>;
  attemptDomain(submissionId: string, domain: string, context: AttemptContext): Promise<DomainAttemptResult>;
  expireDomain(submissionId: string, domain: string): Promise<void>;
}

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
