// The outbox's prompt-attempt slots bound the requests under way: a slot frees when the receiver's answer comes, so
// a delivery waiting for one is not held back while the previous outcome is still being recorded (its grouped
// UPDATE lingers). The deliverer here is a stand-in that reports each step; the outbox itself is the real one.
import { expect, test } from "vitest";
import type { Database } from "../../src/db/database.js";
import { createLogger } from "../../src/logger.js";
import type { ClaimedAttempt, DeliveryRef, WebhookAttemptResult, WebhookDeliverer } from "../../src/webhooks/deliveries.js";
import { createWebhookOutbox, type EnqueuedDelivery } from "../../src/webhooks/outbox.js";

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const ref = (deliveryId: string, attempts: number): DeliveryRef => ({
  deliveryId,
  endpointId: "whk_1",
  eventId: `evt_${deliveryId}`,
  organizationId: "00000000-0000-4000-8000-000000000001",
  inboxId: "inb_1",
  attempts,
});

test("a slot frees when the answer comes, before the outcome is recorded", async () => {
  const steps: string[] = [];
  const recorded = deferred();
  const secondStarted = deferred();
  const deliverer: WebhookDeliverer = {
    // The first delivery was claimed in its store transaction: answered at once, its outcome recorded later.
    async complete(deliveryId: string, _claim: ClaimedAttempt, answered?: () => void): Promise<WebhookAttemptResult> {
      steps.push(`${deliveryId} answered`);
      answered?.();
      await recorded.promise;
      steps.push(`${deliveryId} recorded`);
      return { outcome: "delivered", attempts: 1 };
    },
    // The second waited for a slot, then claims and sends on its own.
    async attempt(deliveryId: string, answered?: () => void): Promise<WebhookAttemptResult> {
      steps.push(`${deliveryId} attempted`);
      secondStarted.resolve();
      answered?.();
      return { outcome: "delivered", attempts: 1 };
    },
  };
  const outbox = createWebhookOutbox({
    db: {} as Database,
    deliverer,
    retries: { start: () => Promise.reject(new Error("no workflow expected")) },
    log: createLogger("error"),
    promptAttempts: 1,
  });
  const first: EnqueuedDelivery = { ref: ref("d1", 1), claim: { url: "https://hooks.example.com/", secret: "whsec_", eventId: "evt_d1", body: "{}", attempts: 1 } };
  const second: EnqueuedDelivery = { ref: ref("d2", 0), claim: null };
  outbox.dispatch([first]);
  outbox.dispatch([second]);
  await secondStarted.promise;
  expect(steps).toEqual(["d1 answered", "d2 attempted"]);
  recorded.resolve();
  await outbox.drain();
  expect(steps).toEqual(["d1 answered", "d2 attempted", "d1 recorded"]);
});
