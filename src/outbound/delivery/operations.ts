// What the delivery workflow drives, in the domain's own terms: queue a submission, attempt one recipient domain,
// expire what the queue lifetime leaves open (createDeliveryOperations in deliverer.ts). The activities of
// src/temporal/activities/delivery.ts adapt these to Temporal; the workflow (workflows/delivery.ts) sees the plain
// data below by type only.

/** What queueing a submission tells the workflow: its domains and the schedule (from the worker's configuration). */
export interface QueuedSubmission {
  /** Recipient domains with recipients still to deliver (none when the submission is gone or already final). */
  readonly domains: readonly string[];
  /** Epoch ms of the submission's creation: the queue lifetime counts from it. */
  readonly createdAtMs: number;
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  readonly queueLifetimeMs: number;
}

/** The outcome of one attempt to one domain. */
export interface DomainAttemptResult {
  /** Recipients of the domain still to deliver (deferred): 0 ends the domain's branch. */
  readonly remaining: number;
  /**
   * What became of each recipient attempted, so the workflow's history tells the delivery's story (the Temporal UI
   * shows an activity's result): absent from results recorded before it existed.
   */
  readonly recipients?: readonly RecipientAttemptOutcome[];
}

/** One recipient's outcome in one attempt: its state and the peer's reply (or why no peer answered). */
export interface RecipientAttemptOutcome {
  readonly email: string;
  readonly status: "delivered" | "deferred" | "bounced" | "failed";
  /** The SMTP reply code, or null when no server answered (DNS, connection, TLS, timeout). */
  readonly replyCode: number | null;
  /** The reply's text as the peer sent it, or the failure. */
  readonly reply: string;
}

/** What an attempt gets from its activity. */
export interface AttemptContext {
  /** Called every few seconds while the attempt runs. */
  heartbeat(): void;
  /** Aborted when the activity is cancelled (or timed out): the attempt ends where it is. */
  readonly signal: AbortSignal;
  /** A first attempt (a local activity): bounded to a short budget, its end reported to the delivery queue. */
  readonly first: boolean;
}

export interface DeliveryOperations {
  queueSubmission(submissionId: string): Promise<QueuedSubmission>;
  attemptDomain(submissionId: string, domain: string, context: AttemptContext): Promise<DomainAttemptResult>;
  expireDomain(submissionId: string, domain: string): Promise<void>;
}
