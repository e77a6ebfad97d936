// The webhook outbox: events are rows committed with what they announce (message.received with the message,
// submission.held with the send), one per active endpoint whose events name the event's type, then dispatched. The first attempt goes out at once from this process, claimed in the transaction that stores the
// message (no extra commit), up to PROMPT_ATTEMPTS at a time; a delivery enqueued while they were all taken waits
// in memory for a free one (bounded in number and time) and is claimed then. Only a delivery that needs retries, or
// that waited too long, gets a Temporal workflow. Whatever dies in between, the reconciler starts what was lost: a
// row never attempted a minute after its commit, and a claimed row left delivering once its lease ends.
import type { Config } from "../config.js";
import type { Database, SqlTx } from "../db/database.js";
import { runPart } from "../db/tables/columns.js";
import { webhookDeliveriesInsert } from "../db/tables/webhook-deliveries.js";
import { activeEndpointsSelect, type ActiveEndpoint } from "../db/tables/webhook-endpoints.js";
import { newUuid } from "../ids.js";
import type { NewEvent } from "../events/event.js";
import type { MessageReceivedOutbox, PlannedDeliveries } from "../inbound/ports.js";
import type { Logger } from "../logger.js";
import type { WebhookMetrics } from "../metrics/metrics.js";
import { CONNECTIONS_PER_RECEIVER } from "./sender.js";
import { createWebhookDeliverer, type ClaimedAttempt, type DeliveryRef, type WebhookDeliverer, type WebhookRetryStarter } from "./deliveries.js";

/** Prompt attempts running at once per process: as many as the sender's connections to one receiver. */
const PROMPT_ATTEMPTS = CONNECTIONS_PER_RECEIVER;
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
  /** Any event, message.received or submission.held: each goes to the endpoints that asked for its type; written now. */
  enqueue(tx: SqlTx, events: readonly NewEvent[]): Promise<EnqueuedDelivery[]>;
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

/**
 * The prompt-attempt slots of a process: a fixed number, and a bounded wait for one. A delivery claimed in its store
 * transaction takes its slot when dispatched (it was counted as claimable then); another waits for one.
 */
class PromptSlots {
  private taken = 0;
  private readonly waiting: ((granted: boolean) => void)[] = [];

  constructor(readonly size: number) {}

  /** Whether the n-th claim of a store transaction (from 0) would find a slot free. */
  claimable(n: number): boolean {
    return this.taken + n < this.size;
  }

  /** The slot of a delivery claimed in its store transaction. */
  takeClaimed(): void {
    this.taken++;
  }

  /** A slot, now or once one frees up; false when the wait is over its bounds (or shutting down). */
  take(): Promise<boolean> {
    if (this.taken < this.size) {
      this.taken++;
      return Promise.resolve(true);
    }
    if (this.waiting.length >= MAX_WAITING) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(wake), 1);
        resolve(false);
      }, MAX_WAIT_MS);
      const wake = (granted: boolean) => {
        clearTimeout(timer);
        resolve(granted);
      };
      this.waiting.push(wake);
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next(true);
    else this.taken--;
  }

  /** Ends every wait: what waits for a slot goes to its workflow. */
  refuseWaiting(): void {
    for (const wake of this.waiting.splice(0)) wake(false);
  }
}

/**
 * One delivery per event and active endpoint of its organization that receives the event's type, claimed for a
 * prompt attempt while slots allow, each with its event's type and body.
 */
function deliveriesOf(events: readonly NewEvent[], endpoints: readonly ActiveEndpoint[], slots: PromptSlots): (EnqueuedDelivery & { body: string; type: string })[] {
  const endpointsOf = new Map<string, ActiveEndpoint[]>();
  for (const endpoint of endpoints) endpointsOf.set(endpoint.organization_id, [...(endpointsOf.get(endpoint.organization_id) ?? []), endpoint]);
  const enqueued: (EnqueuedDelivery & { body: string; type: string })[] = [];
  for (const event of events) {
    // The event's id for every endpoint (and its stream): it names the event, and receivers deduplicate on
    // (endpoint, event id).
    const { eventId, body, organizationId, inboxId, type } = event;
    for (const endpoint of endpointsOf.get(organizationId) ?? []) {
      if (!endpoint.events.includes(type)) continue;
      const claimNow = slots.claimable(enqueued.length);
      const ref = { deliveryId: newUuid(), endpointId: endpoint.id, eventId, organizationId, inboxId, attempts: claimNow ? 1 : 0 };
      const claim = claimNow ? { url: endpoint.url, secret: endpoint.signing_secret, eventId, body, attempts: 1 } : null;
      enqueued.push({ ref, claim, body, type });
    }
  }
  return enqueued;
}

/**
 * The outbox rows of events, for endpoints read (and locked) in the caller's transaction, as a statement part the
 * caller runs in it; answers them too, each claimed or left pending.
 */
function planFor(events: readonly NewEvent[], endpoints: readonly ActiveEndpoint[], slots: PromptSlots): PlannedDeliveries<EnqueuedDelivery> {
  const enqueued = deliveriesOf(events, endpoints, slots);
  const now = new Date();
  const rows = webhookDeliveriesInsert(
    enqueued.map(({ ref, claim, body, type }) => ({
      id: ref.deliveryId,
      organizationId: ref.organizationId,
      endpointId: ref.endpointId,
      eventId: ref.eventId,
      eventType: type,
      payload: body,
      status: claim ? "delivering" : "pending",
      attempts: ref.attempts,
      lastError: null,
      lastAttemptAt: claim ? now : null,
      createdAt: now,
      updatedAt: now,
    })),
  );
  return { rows, enqueued: enqueued.map(({ ref, claim }) => ({ ref, claim })) };
}

/** The prompt attempt of one enqueued delivery, then its workflow if it needs retries (or found no slot in time). */
async function dispatchOne(deps: WebhookOutboxDeps, slots: PromptSlots, delivery: EnqueuedDelivery): Promise<void> {
  let attempts = delivery.ref.attempts;
  let prompted = true;
  if (delivery.claim) slots.takeClaimed();
  else prompted = await slots.take();
  if (prompted) {
    // The slot bounds the requests under way: it frees when the answer comes, not when the outcome is recorded.
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      slots.release();
    };
    try {
      const result = delivery.claim
        ? await deps.deliverer.complete(delivery.ref.deliveryId, delivery.claim, release)
        : await deps.deliverer.attempt(delivery.ref.deliveryId, release);
      if (result.outcome === "delivered" || result.outcome === "failed" || result.outcome === "busy") return;
      attempts = result.attempts;
    } catch (e) {
      // A claim's lease ends and the workflow attempts again.
      deps.log.warn("prompt webhook attempt failed; its workflow retries it", { deliveryId: delivery.ref.deliveryId, error: e });
    } finally {
      release();
    }
  }
  await deps.retries.start({ ...delivery.ref, attempts });
}

export function createWebhookOutbox(deps: WebhookOutboxDeps): WebhookOutbox {
  const slots = new PromptSlots(deps.promptAttempts ?? PROMPT_ATTEMPTS);
  const dispatching = new Set<Promise<void>>();
  return {
    async enqueue(tx, events) {
      if (events.length === 0) return [];
      const endpoints = await tx.query<ActiveEndpoint>(activeEndpointsSelect("= any($1::uuid[])"), [[...new Set(events.map((e) => e.organizationId))]]);
      const { rows, enqueued } = planFor(events, endpoints, slots);
      for (const part of rows) await runPart(tx, part);
      return enqueued;
    },
    plan: (events, endpoints) => planFor(events, endpoints, slots),

    dispatch(enqueued) {
      if (enqueued.length === 0) return;
      const running: Promise<void> = Promise.all(
        enqueued.map((d) =>
          dispatchOne(deps, slots, d).catch((e: unknown) =>
            deps.log.warn("webhook dispatch failed; the reconciler starts its retries", { deliveryId: d.ref.deliveryId, error: e }),
          ),
        ),
      )
        .then(() => undefined)
        .finally(() => dispatching.delete(running));
      dispatching.add(running);
    },

    async drain() {
      // Shutting down: what still waits for a slot goes to its workflow now.
      slots.refuseWaiting();
      await Promise.all(dispatching);
    },
  };
}
