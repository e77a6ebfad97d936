// What outbound acceptance needs from delivery, as an interface the composition root fills in.

/** The delivery queue as acceptance sees it (src/outbound/delivery/queue.ts). */
export interface DeliveryQueue {
  /** The Temporal task queue whose workers deliver what this deployment accepts: recorded on each submission. */
  readonly taskQueue: string;
  /** Throws 503 delivery_backlog (with Retry-After) while delivery is further behind than its configured limit. */
  requireCapacity(): void;
  /** A submission committed: the delivery workers claim it and start its workflow. Never throws, never waits. */
  announce(submissionId: string): void;
}

/**
 * Tells a held submission's delivery workflow that a person decided (src/temporal/client.ts: a signal, starting the
 * workflow when it has none). The decision itself is in PostgreSQL already; this only wakes the workflow, and the
 * hold reconciler repeats it for an approval the workflow did not act on.
 */
export interface HoldDecisionNotifier {
  decided(submission: { readonly submissionId: string; readonly organizationId: string; readonly inboxId: string | null }): Promise<void>;
}
