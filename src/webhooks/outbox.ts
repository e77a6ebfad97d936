// The webhook outbox: message.received events are rows committed with the message, one per active endpoint, then
// dispatched. The first attempt goes out at once from this process; only a delivery that needs retries (or finds
// no free attempt slot) gets a Temporal workflow. Whatever dies in between, the reconciler starts what was lost.
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Database } from "../db/database.js";
import { WebhookDelivery, WebhookEndpoint } from "../db/entities/index.js";
import type { WebhookDeliveryRow } from "../db/entities/webhook-delivery.js";
import { newId, newUuid } from "../ids.js";
import type { MessageReceivedEvent, MessageReceivedOutbox } from "../inbound/ports.js";
import type { Logger } from "../logger.js";
import { refOf, type WebhookDeliverer, type WebhookRetryStarter } from "./deliveries.js";
import { MESSAGE_RECEIVED, messageReceivedBody } from "./events.js";

/** Prompt attempts running at once per process; beyond that, deliveries go straight to their workflow. */
const PROMPT_ATTEMPTS = 16;

export interface WebhookOutbox extends MessageReceivedOutbox {
  /** Waits for the dispatches under way (before the database closes at shutdown). */
  drain(): Promise<void>;
}

export interface WebhookOutboxDeps {
  readonly db: Database;
  readonly deliverer: WebhookDeliverer;
  readonly retries: WebhookRetryStarter;
  readonly log: Logger;
}

export function createWebhookOutbox(deps: WebhookOutboxDeps): WebhookOutbox {
  const { db, deliverer, retries, log } = deps;
  const dispatching = new Set<Promise<void>>();
  let prompt = 0;

  async function dispatchOne(row: WebhookDeliveryRow): Promise<void> {
    let attempts = row.attempts;
    if (prompt < PROMPT_ATTEMPTS) {
      prompt++;
      try {
        const result = await deliverer.attempt(row.id);
        if (result.outcome === "delivered" || result.outcome === "failed") return;
        attempts = result.attempts;
      } catch (e) {
        log.warn("prompt webhook attempt failed; its workflow retries it", { deliveryId: row.id, error: e });
      } finally {
        prompt--;
      }
    }
    await retries.start({ ...refOf(row), attempts });
  }

  async function dispatchAll(ids: readonly string[]): Promise<void> {
    const rows = await db.fork().find(WebhookDelivery, { id: { $in: [...ids] } });
    await Promise.all(
      rows.map((row) =>
        dispatchOne(row).catch((e: unknown) =>
          log.warn("webhook dispatch failed; the reconciler starts its retries", { deliveryId: row.id, error: e }),
        ),
      ),
    );
  }

  return {
    async enqueue(em: EntityManager, event: MessageReceivedEvent): Promise<string[]> {
      const endpoints = await em.find(WebhookEndpoint, { organization: event.organizationId, status: "active" }, { fields: ["id"] });
      if (endpoints.length === 0) return [];
      const now = new Date();
      // One event id for every endpoint: it names the event, and receivers deduplicate on (endpoint, event id).
      const eventId = newId("evt");
      const payload = messageReceivedBody(eventId, now, event);
      const rows = endpoints.map((endpoint) => ({
        id: newUuid(),
        organization: event.organizationId,
        endpointId: endpoint.id,
        eventId,
        eventType: MESSAGE_RECEIVED,
        payload,
        status: "pending",
        attempts: 0,
        lastError: null,
        lastAttemptAt: null,
        createdAt: now,
        updatedAt: now,
      }));
      await em.insertMany(WebhookDelivery, rows);
      return rows.map((r) => r.id);
    },

    dispatch(ids: readonly string[]): void {
      if (ids.length === 0) return;
      const running: Promise<void> = dispatchAll(ids)
        .catch((e: unknown) => log.warn("webhook dispatch failed; the reconciler starts its retries", { deliveryIds: ids, error: e }))
        .finally(() => dispatching.delete(running));
      dispatching.add(running);
    },

    async drain(): Promise<void> {
      await Promise.all(dispatching);
    },
  };
}
