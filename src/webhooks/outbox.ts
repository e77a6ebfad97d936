// The webhook outbox: message.received events are rows committed with the message, one per active endpoint, then
// dispatched. The first attempt goes out at once from this process, claimed in the transaction that stores the
// message (no extra commit), up to PROMPT_ATTEMPTS at a time; a delivery enqueued while they were all taken waits
// in memory for a free one (bounded in number and time) and is claimed then. Only a delivery that needs retries, or
// that waited too long, gets a Temporal workflow. Whatever dies in between, the reconciler starts what was lost: a
// row never attempted a minute after its commit, and a claimed row left delivering once its lease ends.
import type { Config } from "../config.js";
import type { Database, SqlTx } from "../db/database.js";
import { newUuid } from "../ids.js";
import type { MessageReceivedOutbox, NewEvent } from "../inbound/ports.js";
import type { Logger } from "../logger.js";
import type { WebhookMetrics } from "../metrics/metrics.js";
import { createWebhookDeliverer, type ClaimedAttempt, type DeliveryRef, type WebhookDeliverer, type WebhookRetryStarter } from "./deliveries.js";
import { MESSAGE_RECEIVED } from "../events/message-received.js";

/** Prompt attempts running at once per process. */
const PROMPT_ATTEMPTS = 64;
/**
 * Deliveries waiting for a prompt attempt, at most, and how long each may wait; beyond either, the workflow takes
 * over. Waiting is the cheap path under a burst: a workflow costs the Temporal dev server ~70 ms of CPU, which
 * starved everything else. The wait ends well before the reconciler's one-minute grace for unattempted rows.
 */
const MAX_WAITING = 5_000;
const MAX_WAIT_MS = 20_000;

/** One delivery as enqueued: claimed for its prompt first attempt, or left pending for its workflow. */
export interface EnqueuedDelivery {
  readonly ref: DeliveryRef;
  readonly claim: ClaimedAttempt | null;
}

export interface WebhookOutbox extends MessageReceivedOutbox<EnqueuedDelivery> {
  /** Waits for the dispatches under way (before the database closes at shutdown). */
  drain(): Promise<void>;
}

export interface WebhookOutboxDeps {
  readonly db: Database;
  readonly deliverer: WebhookDeliverer;
  readonly retries: WebhookRetryStarter;
  readonly log: Logger;
  /** Prompt attempts at once (PROMPT_ATTEMPTS unless a test asks for fewer). */
  readonly promptAttempts?: number;
}

/** The webhook outbox of a configuration: prompt first attempts from this process, retries through `retries`. */
export function createConfiguredOutbox(
  config: Pick<Config, "webhooks">,
  db: Database,
  retries: WebhookRetryStarter,
  log: Logger,
  metrics?: WebhookMetrics,
): WebhookOutbox {
  return createWebhookOutbox({ db, deliverer: createWebhookDeliverer(db, config.webhooks, metrics), retries, log });
}

export function createWebhookOutbox(deps: WebhookOutboxDeps): WebhookOutbox {
  const { deliverer, retries, log } = deps;
  const promptAttempts = deps.promptAttempts ?? PROMPT_ATTEMPTS;
  const dispatching = new Set<Promise<void>>();
  let prompt = 0;
  const waiting: ((granted: boolean) => void)[] = [];

  /** A prompt attempt slot, now or once one frees up; false when the wait is over its bounds (or shutting down). */
  function slot(): Promise<boolean> {
    if (prompt < promptAttempts) {
      prompt++;
      return Promise.resolve(true);
    }
    if (waiting.length >= MAX_WAITING) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(wake), 1);
        resolve(false);
      }, MAX_WAIT_MS);
      const wake = (granted: boolean) => {
        clearTimeout(timer);
        resolve(granted);
      };
      waiting.push(wake);
    });
  }
  function freeSlot(): void {
    const next = waiting.shift();
    if (next) next(true);
    else prompt--;
  }

  async function dispatchOne(delivery: EnqueuedDelivery): Promise<void> {
    let attempts = delivery.ref.attempts;
    // A claimed delivery takes its slot at once (it was counted when claimed); another waits for one.
    let prompted = true;
    if (delivery.claim) prompt++;
    else prompted = await slot();
    if (prompted) {
      try {
        const result = delivery.claim
          ? await deliverer.complete(delivery.ref.deliveryId, delivery.claim)
          : await deliverer.attempt(delivery.ref.deliveryId);
        if (result.outcome === "delivered" || result.outcome === "failed" || result.outcome === "busy") return;
        attempts = result.attempts;
      } catch (e) {
        // A claim's lease ends and the workflow attempts again.
        log.warn("prompt webhook attempt failed; its workflow retries it", { deliveryId: delivery.ref.deliveryId, error: e });
      } finally {
        freeSlot();
      }
    }
    await retries.start({ ...delivery.ref, attempts });
  }

  return {
    async enqueue(tx: SqlTx, events: readonly NewEvent[]): Promise<EnqueuedDelivery[]> {
      if (events.length === 0) return [];
      // FOR SHARE, in the order an endpoint delete locks (endpoint, then its deliveries): a delete that commits
      // first leaves nothing active here, one that comes second sees the claims made here and answers 409.
      const endpoints = await tx.query<{ id: string; organization_id: string; url: string; signing_secret: string }>(
        `select id, organization_id, url, signing_secret from webhook_endpoints
          where organization_id = any($1::uuid[]) and status = 'active' order by id for share`,
        [[...new Set(events.map((e) => e.organizationId))]],
      );
      if (endpoints.length === 0) return [];
      const now = new Date();
      const enqueued: EnqueuedDelivery[] = [];
      const payloads: string[] = [];
      const endpointsOf = new Map<string, typeof endpoints>();
      for (const endpoint of endpoints) endpointsOf.set(endpoint.organization_id, [...(endpointsOf.get(endpoint.organization_id) ?? []), endpoint]);
      for (const event of events) {
        const ofOrganization = endpointsOf.get(event.organizationId) ?? [];
        // The event's id for every endpoint (and its stream): it names the event, and receivers deduplicate on
        // (endpoint, event id).
        const { eventId, body } = event;
        for (const endpoint of ofOrganization) {
          const claimNow = prompt + enqueued.length < promptAttempts;
          const ref = { deliveryId: newUuid(), endpointId: endpoint.id, eventId, organizationId: event.organizationId, inboxId: event.inboxId, attempts: claimNow ? 1 : 0 };
          const claim = claimNow ? { url: endpoint.url, secret: endpoint.signing_secret, eventId, body, attempts: 1 } : null;
          enqueued.push({ ref, claim });
          payloads.push(body);
        }
      }
      if (enqueued.length === 0) return [];
      await tx.query(
        `insert into webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, status, attempts,
           last_error, last_attempt_at, created_at, updated_at)
         select d.id, d.organization_id, d.endpoint_id, d.event_id, $9::text, d.payload, d.status, d.attempts, null, d.last_attempt_at,
                $10::timestamptz, $10::timestamptz
           from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::timestamptz[])
             as d(id, organization_id, endpoint_id, event_id, payload, status, attempts, last_attempt_at)`,
        [
          enqueued.map((d) => d.ref.deliveryId),
          enqueued.map((d) => d.ref.organizationId),
          enqueued.map((d) => d.ref.endpointId),
          enqueued.map((d) => d.ref.eventId),
          payloads,
          enqueued.map((d) => (d.claim ? "delivering" : "pending")),
          enqueued.map((d) => d.ref.attempts),
          enqueued.map((d) => (d.claim ? now : null)),
          MESSAGE_RECEIVED,
          now,
        ],
      );
      return enqueued;
    },

    dispatch(enqueued: readonly EnqueuedDelivery[]): void {
      if (enqueued.length === 0) return;
      const running: Promise<void> = Promise.all(
        enqueued.map((d) =>
          dispatchOne(d).catch((e: unknown) =>
            log.warn("webhook dispatch failed; the reconciler starts its retries", { deliveryId: d.ref.deliveryId, error: e }),
          ),
        ),
      )
        .then(() => undefined)
        .finally(() => dispatching.delete(running));
      dispatching.add(running);
    },

    async drain(): Promise<void> {
      // Shutting down: what still waits for a slot goes to its workflow now.
      for (const wake of waiting.splice(0)) wake(false);
      await Promise.all(dispatching);
    },
  };
}
