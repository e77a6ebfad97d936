// Delivers one submission (id deliver/<submissionId>): marks it queued, then works every recipient domain in
// parallel. One activity is one SMTP transaction to one domain; recipients it defers are retried after a doubling
// backoff until the queue lifetime (counted from the submission's creation) runs out, and a deferring domain never
// holds up another. Every state change is written by the activities; the workflow only keeps the schedule.
import { continueAsNew, proxyActivities, sleep, workflowInfo } from "@temporalio/workflow";
import type { DeliveryActivities } from "../src/temporal/activities/delivery.js";

/**
 * Failures of our own side (database down, worker lost) only: an SMTP peer's answer is a result, not an error.
 * Attempts are idempotent (recipients already final are never sent again), so they are retried until they run.
 */
const ACTIVITY_RETRY = { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "1m" } as const;
/** Longer than the attempt's SMTP timeouts over a few MX hosts; a lost worker is noticed by the heartbeat instead. */
const ATTEMPT_TIMEOUT = "30m";
/** An attempt heartbeats every few seconds while it talks SMTP: a killed worker's attempt is retried this soon. */
const ATTEMPT_HEARTBEAT_TIMEOUT = "10s";

const bookkeeping = proxyActivities<DeliveryActivities>({ startToCloseTimeout: "1m", retry: ACTIVITY_RETRY });
const attemptsActivity = proxyActivities<DeliveryActivities>({
  startToCloseTimeout: ATTEMPT_TIMEOUT,
  heartbeatTimeout: ATTEMPT_HEARTBEAT_TIMEOUT,
  retry: ACTIVITY_RETRY,
});

export interface DeliveryArgs {
  readonly submissionId: string;
  readonly organizationId: string;
  readonly inboxId: string | null;
  /** Attempts made per domain by earlier runs (continue-as-new), so the backoff goes on where it was. */
  readonly attempts?: Readonly<Record<string, number>>;
}

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
}

export interface DeliveryResult {
  readonly domains: number;
}

/** The wait after the `attempt`-th attempt (1-based) of a domain: initial, doubling, capped. Deterministic. */
export function deliveryRetryDelayMs(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(0, attempt - 1), 40));
}

export async function delivery(args: DeliveryArgs): Promise<DeliveryResult> {
  const queued = await bookkeeping.queueSubmission(args.submissionId);
  const deadline = queued.createdAtMs + queued.queueLifetimeMs;
  const attempts: Record<string, number> = { ...args.attempts };
  const outcomes = await Promise.all(queued.domains.map((domain) => deliverDomain(args.submissionId, domain, deadline, queued, attempts)));
  // A long retry schedule (short waits, long lifetime) would outgrow one history: a new run goes on with the domains
  // still open, and their attempt counts.
  if (outcomes.includes("continue")) await continueAsNew<typeof delivery>({ ...args, attempts });
  return { domains: queued.domains.length };
}

async function deliverDomain(
  submissionId: string,
  domain: string,
  deadline: number,
  schedule: QueuedSubmission,
  attempts: Record<string, number>,
): Promise<"done" | "continue"> {
  for (;;) {
    // Date.now() is the workflow clock: the same on every replay.
    if (Date.now() >= deadline) {
      await bookkeeping.expireDomain({ submissionId, domain });
      return "done";
    }
    const result = await attemptsActivity.attemptDomain({ submissionId, domain });
    attempts[domain] = (attempts[domain] ?? 0) + 1;
    if (result.remaining === 0) return "done";
    const wait = deliveryRetryDelayMs(attempts[domain], schedule.retryInitialMs, schedule.retryMaxMs);
    await sleep(Math.max(1, Math.min(wait, deadline - Date.now())));
    // Handed to the next run when the attempt is due: it makes it at once.
    if (workflowInfo().continueAsNewSuggested) return "continue";
  }
}
