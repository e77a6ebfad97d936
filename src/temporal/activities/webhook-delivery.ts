// Activities of the webhook delivery workflow: one attempt each, idempotent (the attempt claims its row first).
import type { WebhookDeliverer } from "../../webhooks/deliveries.js";

export function createWebhookDeliveryActivities(deliverer: WebhookDeliverer) {
  return {
    attemptWebhookDelivery: (deliveryId: string) => deliverer.attempt(deliveryId),
  };
}

export type WebhookDeliveryActivities = ReturnType<typeof createWebhookDeliveryActivities>;
