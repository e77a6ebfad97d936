// The contracts of this service's workflows: their argument and result types, plain JSON (ids and primitives, never
// entities or proto messages), and types only. What a workflow's activities return is the domain's own data, named
// here by type from src/ (never a value: workflows/ is bundled into the deterministic sandbox). src/temporal/ starts
// workflows with these arguments; nothing else under src/ needs them.
import type { HoldState } from "../src/outbound/delivery/holds.js";
import type { DomainAttemptResult, QueuedSubmission, RecipientAttemptOutcome } from "../src/outbound/delivery/operations.js";
import type { ScanState } from "../src/scanning/scanner.js";
import type { WebhookAttemptResult } from "../src/webhooks/deliveries.js";

export type { DomainAttemptResult, HoldState, QueuedSubmission, RecipientAttemptOutcome, WebhookAttemptResult };

export interface InboxPurgeArgs {
  readonly inboxId: string;
  readonly organizationId: string;
  readonly batchSize: number;
}

export interface InboxPurgeResult {
  readonly deletedRows: number;
}

export interface DeliveryArgs {
  readonly submissionId: string;
  readonly organizationId: string;
  readonly inboxId: string | null;
  /** Attempts made per domain by earlier runs (continue-as-new), so the backoff goes on where it was. */
  readonly attempts?: Readonly<Record<string, number>>;
  /** Set when the delivery queue claimed (queued) the submission before starting the workflow. */
  readonly queued?: QueuedSubmission;
  /** Set when the submission was held for a person's decision: the workflow waits for it before anything is sent. */
  readonly held?: boolean;
  /**
   * Set when the delivery queue made the first attempts itself (counted in `attempts`): each of those domains waits
   * its backoff before its next attempt, as after an attempt of this workflow.
   */
  readonly attemptedBeforeStart?: boolean;
}

export interface DeliveryResult {
  readonly domains: number;
  /** The last outcome of each recipient attempted in this run, counted by status (delivered, deferred, bounced, failed). */
  readonly recipients?: Readonly<Record<string, number>>;
  /** How the hold of a held submission ended: approved (then delivered as any other), rejected, hold_expired or gone. */
  readonly hold?: HoldState["status"];
}

export interface WebhookRetrySchedule {
  /** The wait after the first failed attempt; it doubles after each further one. */
  readonly initialMs: number;
  /** The longest wait between two attempts. */
  readonly maxMs: number;
}

export interface WebhookDeliveryArgs {
  readonly deliveryId: string;
  readonly organizationId: string;
  /** Null for an event without an inbox (a submission.held of /v1/send). */
  readonly inboxId: string | null;
  /** Attempts already made (the prompt one): the first wait follows from it. */
  readonly attemptsSoFar: number;
  readonly retry: WebhookRetrySchedule;
}

export interface AttachmentScanArgs {
  readonly organizationId: string;
  readonly inboxId: string;
  readonly messageId: string;
}

export interface AttachmentScanResult {
  /** Attachments this run scanned (those still unscanned when it began). */
  readonly scanned: number;
  /** The message's attachments scan state, or null when the message has no attachments (any more). */
  readonly state: ScanState | null;
}

export interface DomainVerificationArgs {
  readonly domainId: string;
  readonly organizationId: string;
}
