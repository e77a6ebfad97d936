// Retries one webhook delivery (one event for one endpoint) until the receiver answers 2xx or the attempts are used
// up. Every attempt is a local activity that sends the same event id and body; between attempts the workflow sleeps
// an exponential, jittered backoff, so the schedule survives any restart of workers or the service.
//
// Local activities: an attempt is one short HTTPS request, and running it inside the workflow task spares the
// server an activity task's dispatch (measured with bench:inbound: retry workflows were the dev server's main CPU
// cost when a receiver failed 10% of events). A crash mid-attempt re-runs it, as with an activity.
import { patched, proxyActivities, proxyLocalActivities, sleep } from "@temporalio/workflow";
import type { WebhookDeliveryActivities } from "../src/temporal/activities/webhook-delivery.js";
import type { WebhookAttemptResult, WebhookDeliveryArgs, WebhookRetrySchedule } from "./types.js";

/**
 * Failures of our own side (database down, worker lost) only: a receiver's failure is a result, not an error. An
 * attempt is idempotent (it claims the row first), so it is retried until it runs.
 */
const ATTEMPT_RETRY = { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "1m" } as const;
/** Longer than the longest request timeout (WEBHOOK_TIMEOUT_MS ≤ 60 s) plus the database work around it. */
const ATTEMPT_TIMEOUT = "2m";
/** How long to wait when another process holds the delivery's claim (its attempt is still running). */
const BUSY_WAIT_MS = 5_000;

const local = proxyLocalActivities<WebhookDeliveryActivities>({ startToCloseTimeout: ATTEMPT_TIMEOUT, retry: ATTEMPT_RETRY });
/** Attempts as regular activities: only histories that began before the local ones replay through this. */
const activities = proxyActivities<WebhookDeliveryActivities>({ startToCloseTimeout: ATTEMPT_TIMEOUT, retry: ATTEMPT_RETRY });

/**
 * The wait after `attempts` failed attempts: "equal jitter", half of the capped exponential delay plus a random
 * part of the other half, so receivers recovering from an outage are not hit by every retry at once.
 */
export function webhookRetryDelayMs(attempts: number, schedule: WebhookRetrySchedule, random: number): number {
  const cap = Math.min(schedule.maxMs, schedule.initialMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(cap / 2 + (random * cap) / 2);
}

export async function webhookDelivery(args: WebhookDeliveryArgs): Promise<WebhookAttemptResult> {
  const attempt = patched("webhook-attempts-local") ? local.attemptWebhookDelivery : activities.attemptWebhookDelivery;
  let attempts = args.attemptsSoFar;
  let busy = false;
  for (;;) {
    // Math.random is deterministic inside a workflow (seeded per run), so replays wait the same.
    if (busy) await sleep(BUSY_WAIT_MS);
    else if (attempts > 0) await sleep(webhookRetryDelayMs(attempts, args.retry, Math.random()));
    const result = await attempt(args.deliveryId);
    if (result.outcome === "delivered" || result.outcome === "failed") return result;
    busy = result.outcome === "busy";
    attempts = result.attempts;
  }
}
