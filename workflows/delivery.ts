// Delivers one submission (id deliver/<submissionId>): its recipient domains in parallel. One attempt is one SMTP
// transaction to one domain; recipients it defers are retried after a doubling backoff until the queue lifetime
// (counted from the submission's creation) runs out, and a deferring domain never holds up another. Every state
// change is written by the activities; the workflow only keeps the schedule.
//
// The delivery queue claims a submission (pending → queued) and makes the first attempt to each domain itself; it
// starts this workflow only for the domains left open, with what the claim found (`queued`), the attempts made
// (`attempts`) and `attemptedBeforeStart`: each of those domains waits its backoff, then retries. Started without
// `queued` (the reconciler, a dead worker's claim taken over), the workflow queues the submission itself and makes
// the first attempts. A first attempt here is a local activity, run by the worker inside the workflow task: no
// activity task for the server to dispatch (bench:outbound's floor: two activities cost the dev server twice the
// CPU of two local ones and 100+ ms of dispatch). It is bounded (FIRST_ATTEMPT_BUDGET_MS); retries are regular
// activities that heartbeat, so a long schedule of retries costs a workflow task per attempt only. A worker lost
// during a first attempt loses its workflow task: another worker replays it and runs the attempt again, as a
// retried activity would.
import { continueAsNew, patched, proxyActivities, proxyLocalActivities, sleep, workflowInfo } from "@temporalio/workflow";
import type { DeliveryActivities } from "../src/temporal/activities/delivery.js";
import { awaitHoldDecision, DeliveryStory } from "./delivery-story.js";
import type { DeliveryArgs, DeliveryResult, QueuedSubmission } from "./types.js";

/**
 * Failures of our own side (database down, worker lost) only: an SMTP peer's answer is a result, not an error.
 * Attempts are idempotent (recipients already final are never sent again), so they are retried until they run.
 */
const ACTIVITY_RETRY = { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "1m" } as const;
/** Longer than the attempt's SMTP timeouts over a few MX hosts; a lost worker is noticed by the heartbeat instead. */
const ATTEMPT_TIMEOUT = "30m";
/** An attempt heartbeats every few seconds while it talks SMTP: a killed worker's attempt is retried this soon. */
const ATTEMPT_HEARTBEAT_TIMEOUT = "10s";

/** Longer than a first attempt's budget (FIRST_ATTEMPT_BUDGET_MS, 60 s) with its bookkeeping. */
const FIRST_ATTEMPT_TIMEOUT = "2m";
/** Histories begun before the first attempt became local replay through the activities they recorded. */
const LOCAL_FIRST_ATTEMPT = "delivery-local-first-attempt";

const bookkeeping = proxyActivities<DeliveryActivities>({ startToCloseTimeout: "1m", retry: ACTIVITY_RETRY });
const local = proxyLocalActivities<DeliveryActivities>({ startToCloseTimeout: FIRST_ATTEMPT_TIMEOUT, retry: ACTIVITY_RETRY });
const attemptsActivity = proxyActivities<DeliveryActivities>({
  startToCloseTimeout: ATTEMPT_TIMEOUT,
  heartbeatTimeout: ATTEMPT_HEARTBEAT_TIMEOUT,
  retry: ACTIVITY_RETRY,
});

/** The wait after the `attempt`-th attempt (1-based) of a domain: initial, doubling, capped. Deterministic. */
export function deliveryRetryDelayMs(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(0, attempt - 1), 40));
}

export async function delivery(args: DeliveryArgs): Promise<DeliveryResult> {
  if (!patched(LOCAL_FIRST_ATTEMPT)) return deliveryWithActivities(args);
  // A held send waits for a person's decision before anything else (workflows/delivery-story.ts).
  if (args.held) {
    const hold = await awaitHoldDecision(args.submissionId);
    if (hold !== "approved") return { domains: 0, hold };
  }
  const story = new DeliveryStory();
  const queued = args.queued ?? (await local.queueSubmission(args.submissionId));
  const deadline = queued.createdAtMs + queued.queueLifetimeMs;
  const attempts: Record<string, number> = { ...args.attempts };
  const outcomes = await Promise.all(
    queued.domains.map(async (domain) => {
      // The first attempt is local; the domain's retries (and a later run's attempts) are activities.
      if (!attempts[domain] && Date.now() < deadline) {
        const first = await local.attemptDomain({ submissionId: args.submissionId, domain });
        story.attempted(first);
        attempts[domain] = 1;
        if (first.remaining === 0) return "done";
        await sleep(retryWait(attempts[domain], deadline, queued));
      } else if (args.attemptedBeforeStart && Date.now() < deadline) {
        // The delivery queue's own first attempt deferred: the backoff after it, as after one of ours.
        await sleep(retryWait(attempts[domain]!, deadline, queued));
      }
      return deliverDomain(args.submissionId, domain, deadline, queued, attempts, story);
    }),
  );
  // A long retry schedule (short waits, long lifetime) would outgrow one history: a new run goes on with the domains
  // still open, and their attempt counts.
  if (outcomes.includes("continue")) await continueAsNew<typeof delivery>({ submissionId: args.submissionId, organizationId: args.organizationId, inboxId: args.inboxId, attempts });
  return { domains: queued.domains.length, recipients: story.counts(), ...(args.held ? { hold: "approved" as const } : {}) };
}

/** The wait before the next attempt of a domain, within the queue lifetime. */
function retryWait(attemptsMade: number, deadline: number, schedule: QueuedSubmission): number {
  const wait = deliveryRetryDelayMs(attemptsMade, schedule.retryInitialMs, schedule.retryMaxMs);
  return Math.max(1, Math.min(wait, deadline - Date.now()));
}

/** Every attempt an activity: how runs begun before LOCAL_FIRST_ATTEMPT go on (their histories replay this). */
async function deliveryWithActivities(args: DeliveryArgs): Promise<DeliveryResult> {
  const queued = await bookkeeping.queueSubmission(args.submissionId);
  const deadline = queued.createdAtMs + queued.queueLifetimeMs;
  const attempts: Record<string, number> = { ...args.attempts };
  const outcomes = await Promise.all(queued.domains.map((domain) => deliverDomain(args.submissionId, domain, deadline, queued, attempts)));
  if (outcomes.includes("continue")) await continueAsNew<typeof delivery>({ ...args, attempts });
  return { domains: queued.domains.length };
}

async function deliverDomain(
  submissionId: string,
  domain: string,
  deadline: number,
  schedule: QueuedSubmission,
  attempts: Record<string, number>,
  story?: DeliveryStory,
): Promise<"done" | "continue"> {
  for (;;) {
    // Date.now() is the workflow clock: the same on every replay.
    if (Date.now() >= deadline) {
      await bookkeeping.expireDomain({ submissionId, domain });
      return "done";
    }
    const result = await attemptsActivity.attemptDomain({ submissionId, domain });
    story?.attempted(result);
    attempts[domain] = (attempts[domain] ?? 0) + 1;
    if (result.remaining === 0) return "done";
    await sleep(retryWait(attempts[domain], deadline, schedule));
    // Handed to the next run when the attempt is due: it makes it at once.
    if (workflowInfo().continueAsNewSuggested) return "continue";
  }
}
