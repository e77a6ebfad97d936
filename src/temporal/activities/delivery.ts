// Activities of the delivery workflow. Each is idempotent: queueing only moves pending rows, an attempt sends only
// to recipients that are not final yet, and expiring only fails recipients that are still open.
import { heartbeat } from "@temporalio/activity";
import type { DomainAttemptResult, QueuedSubmission } from "../../../workflows/delivery.js";

/** What the activities need from the outbound delivery code (createDeliveryOperations in src/outbound/delivery). */
export interface DeliveryOperations {
  queueSubmission(submissionId: string): Promise<QueuedSubmission>;
  /** `heartbeat` is called every few seconds while the attempt runs. */
  attemptDomain(submissionId: string, domain: string, heartbeat: () => void): Promise<DomainAttemptResult>;
  expireDomain(submissionId: string, domain: string): Promise<void>;
}

export function createDeliveryActivities(operations: DeliveryOperations) {
  return {
    /** Marks the submission queued (queueId set, recipients pending → queued) and lists its open domains. */
    queueSubmission: (submissionId: string) => operations.queueSubmission(submissionId),
    /** One SMTP transaction to one recipient domain, for its recipients that are not final yet. */
    attemptDomain: (args: { submissionId: string; domain: string }) => operations.attemptDomain(args.submissionId, args.domain, () => heartbeat()),
    /** The queue lifetime ran out: the domain's open recipients fail with queue_lifetime_exceeded. */
    expireDomain: (args: { submissionId: string; domain: string }) => operations.expireDomain(args.submissionId, args.domain),
  };
}

export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;
