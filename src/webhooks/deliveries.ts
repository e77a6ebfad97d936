// The life of one outbox row (one event for one endpoint): pending → delivering → delivered, or back to pending
// after a failed attempt, or failed (dropped) when the attempts are used up or the endpoint is deleted.
//
// An attempt claims the row first (status delivering, attempts + 1), so two processes never send the same attempt,
// and a claim is a lease: a row left delivering by a crashed process can be claimed again once the lease ends.
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import { groupCommit } from "../db/group-commit.js";
import { systemStore } from "../db/system-store.js";
import type { WebhookMetrics } from "../metrics/metrics.js";
import type { Reconciler } from "../jobs/periodic-jobs.js";
import { WebhookDelivery } from "../db/entities/index.js";
import type { WebhookDeliveryRow } from "../db/entities/webhook-delivery.js";
import { inboxIdOf } from "../events/event.js";
import { createWebhookSender } from "./sender.js";

export type WebhookSettings = Config["webhooks"];

/** Time a claim holds beyond the request timeout before another attempt may take the row over. */
const LEASE_MARGIN_MS = 30_000;
/** How long a row may wait for its first attempt, or past its latest possible retry, before it counts as lost. */
const ORPHAN_GRACE_MS = 60_000;
const RECONCILE_BATCH = 1000;
/** Claims grouped while one is under way (no linger: an attempt waits for no other). */
const CLAIMING = { maxGroup: 100, maxInFlight: 2 };
/**
 * Outcomes recorded in one UPDATE and commit: up to 200, gathered for up to 20 ms. Answers come one by one, each at
 * its own moment, so without the linger nearly every one was a commit of its own (~0.8 commits per delivery at
 * 200 messages/s). The wait delays no request (the slot frees when the answer comes) and nothing the receiver sees;
 * a crash within it leaves the row delivering, attempted again once its lease ends (at least once, as before).
 */
const RECORDING = { maxGroup: 200, maxInFlight: 2, lingerMs: 20 };

interface AttemptOutcome {
  readonly deliveryId: string;
  readonly status: "delivered" | "failed" | "pending";
  readonly lastError: string | null;
  /** The attempt's number: the row is updated only while this attempt still holds it. */
  readonly attempts: number;
}

/** The outcome of one attempt: retry and busy keep its workflow going, delivered and failed (dropped) end it. */
export interface WebhookAttemptResult {
  readonly outcome: "delivered" | "failed" | "retry" | "busy";
  /** Attempts made so far, this one included. */
  readonly attempts: number;
}

export const ENDPOINT_DELETED = "the endpoint was deleted";

export function deliveryLeaseMs(settings: WebhookSettings): number {
  return settings.timeoutMs + LEASE_MARGIN_MS;
}

/** The rows of an endpoint whose attempt is running now (delete answers 409 while there is one). */
export function inFlightDeliveries(endpointId: string, leaseMs: number, now = new Date()) {
  return { endpointId, status: "delivering", lastAttemptAt: { $gt: new Date(now.getTime() - leaseMs) } };
}

/** What a durable retry needs: the business key, the search attributes, and how many attempts were made. */
export interface DeliveryRef {
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly eventId: string;
  readonly organizationId: string;
  /** Null for an event without an inbox (a submission.held of /v1/send). */
  readonly inboxId: string | null;
  readonly attempts: number;
}

/** Starts the durable retries of a delivery (the webhook delivery workflow); idempotent per endpoint and event. */
export interface WebhookRetryStarter {
  start(delivery: DeliveryRef): Promise<void>;
}

export function refOf(row: WebhookDeliveryRow): DeliveryRef {
  return {
    deliveryId: row.id,
    endpointId: row.endpointId,
    eventId: row.eventId,
    organizationId: row.organization.id,
    inboxId: inboxIdOf(row.payload),
    attempts: row.attempts,
  };
}

/** A delivery claimed for one attempt (status delivering, attempts counted): what the attempt sends. */
export interface ClaimedAttempt {
  readonly url: string;
  readonly secret: string;
  readonly eventId: string;
  readonly body: string;
  /** Attempts with this one. */
  readonly attempts: number;
}

type Claim = ({ readonly claimed: true } & ClaimedAttempt) | { readonly claimed: false; readonly result: WebhookAttemptResult };

export type WebhookDeliverer = ReturnType<typeof createWebhookDeliverer>;

export function createWebhookDeliverer(db: Database, settings: WebhookSettings, metrics?: WebhookMetrics) {
  const send = createWebhookSender(settings);
  const leaseMs = deliveryLeaseMs(settings);

  // Plain SQL on the driver's pool, not the ORM: every prompt attempt that waited for a slot and every retry claims
  // here, and the ORM's entity loading and flush cost the processing thread more than the attempt's request.
  // Claims that come while one is under way go together in one transaction (a burst's deliveries that found no slot
  // in their store transaction each claim as a slot frees: one transaction of five statements apiece otherwise).
  async function claimGroup(deliveryIds: readonly string[]): Promise<Claim[]> {
    const ids = [...new Set(deliveryIds)];
    const claims = await db.sql.transaction(async (tx): Promise<Map<string, Claim>> => {
      // Endpoints are locked before deliveries, in the order deletion locks them, so the two cannot deadlock; a
      // delete that commits first leaves no active endpoint here, one that comes second sees this claim. Rows are
      // locked in id order, so two groups cannot deadlock either.
      const endpoints = await tx.query<{ id: string; url: string; signing_secret: string }>(
        `select e.id, e.url, e.signing_secret from webhook_endpoints e
          where e.id in (select endpoint_id from webhook_deliveries where id = any($1::uuid[])) and e.status = 'active'
          order by e.id for share of e`,
        [ids],
      );
      const deliveries = await tx.query<{ id: string; endpoint_id: string; status: string; attempts: number; last_attempt_at: Date | null; event_id: string; payload: string }>(
        `select id, endpoint_id, status, attempts, last_attempt_at, event_id, payload from webhook_deliveries
          where id = any($1::uuid[]) order by id for update`,
        [ids],
      );
      const activeEndpoint = new Map(endpoints.map((e) => [e.id, e]));
      const now = new Date();
      const answers = new Map<string, Claim>();
      const dropped: string[] = [];
      const claimed: string[] = [];
      for (const delivery of deliveries) {
        const { id, status, attempts } = delivery;
        const endpoint = activeEndpoint.get(delivery.endpoint_id);
        if (status === "delivered" || status === "failed") answers.set(id, { claimed: false, result: { outcome: status, attempts } });
        else if (!endpoint) {
          dropped.push(id);
          answers.set(id, { claimed: false, result: { outcome: "failed", attempts } });
        } else if (status === "delivering" && delivery.last_attempt_at!.getTime() > now.getTime() - leaseMs) {
          answers.set(id, { claimed: false, result: { outcome: "busy", attempts } });
        } else {
          claimed.push(id);
          const next = attempts + 1;
          answers.set(id, { claimed: true, url: endpoint.url, secret: endpoint.signing_secret, eventId: delivery.event_id, body: delivery.payload, attempts: next });
        }
      }
      if (dropped.length > 0) {
        await tx.query(`update webhook_deliveries set status = 'failed', last_error = $2, updated_at = $3 where id = any($1::uuid[])`, [dropped, ENDPOINT_DELETED, now]);
      }
      if (claimed.length > 0) {
        await tx.query(
          `update webhook_deliveries set status = 'delivering', attempts = attempts + 1, last_attempt_at = $2, updated_at = $2 where id = any($1::uuid[])`,
          [claimed, now],
        );
      }
      return answers;
    });
    const answered = new Set<string>();
    return deliveryIds.map((id): Claim => {
      const claim = claims.get(id) ?? { claimed: false, result: { outcome: "failed", attempts: 0 } };
      // The same delivery twice in one group: the first holds the claim, the other finds it busy.
      if (answered.has(id) && claim.claimed) return { claimed: false, result: { outcome: "busy", attempts: claim.attempts } };
      answered.add(id);
      return claim;
    });
  }
  const claim = groupCommit<string, Claim>(claimGroup, CLAIMING);

  // Outcomes are recorded in groups: under load many attempts finish at once, and each would otherwise be a commit.
  // Conditional on the claim still being ours: a lease taken over by another attempt is not overwritten.
  const record = groupCommit<AttemptOutcome, boolean>(async (outcomes) => {
    const recorded = await db.sql.query<{ id: string; attempts: number }>(
      `update webhook_deliveries d set status = v.status, last_error = v.last_error, updated_at = $5
         from unnest($1::uuid[], $2::varchar[], $3::text[], $4::int[]) as v(id, status, last_error, attempts)
        where d.id = v.id and d.status = 'delivering' and d.attempts = v.attempts
        returning d.id, d.attempts`,
      [outcomes.map((o) => o.deliveryId), outcomes.map((o) => o.status), outcomes.map((o) => o.lastError), outcomes.map((o) => o.attempts), new Date()],
    );
    const ours = new Set(recorded.map((r) => `${r.id}/${r.attempts}`));
    return outcomes.map((o) => ours.has(`${o.deliveryId}/${o.attempts}`));
  }, RECORDING);

  /**
   * Sends a claimed attempt and records its outcome; never throws for a receiver's failure, only for our own.
   * `answered` is called once the request is over, before the outcome is recorded (the request's slot frees then).
   */
  async function complete(deliveryId: string, c: ClaimedAttempt, answered?: () => void): Promise<WebhookAttemptResult> {
    const sent = await send({ url: c.url, secret: c.secret, eventId: c.eventId, body: c.body });
    answered?.();
    const status = sent.ok ? "delivered" : c.attempts >= settings.maxAttempts ? "failed" : "pending";
    metrics?.attempted(status === "pending" ? "retry" : status);
    const recorded = await record({ deliveryId, status, lastError: sent.ok ? null : sent.error, attempts: c.attempts });
    if (!recorded) return { outcome: "busy", attempts: c.attempts };
    return { outcome: status === "pending" ? "retry" : status, attempts: c.attempts };
  }

  return {
    complete,
    /** Makes one attempt if the row is due one; never throws for a receiver's failure, only for our own. */
    async attempt(deliveryId: string, answered?: () => void): Promise<WebhookAttemptResult> {
      const c = await claim(deliveryId);
      if (!c.claimed) return c.result;
      return complete(deliveryId, c, answered);
    },
  };
}

/**
 * Deliveries that lost their retries: never attempted (the process died between the commit and the dispatch),
 * overdue for a retry (the workflow start failed), or left delivering past the lease (the process died
 * mid-attempt). Starts are idempotent by workflow id, so a delivery whose workflow runs is left be.
 */
export function webhookDeliveryReconciler(db: Database, retries: WebhookRetryStarter, settings: WebhookSettings): Reconciler<DeliveryRef> {
  return {
    name: "webhook delivery",
    async stranded() {
      const now = Date.now();
      const lost = await systemStore(db).find(
        WebhookDelivery,
        {
          $or: [
            { status: "pending", attempts: 0, createdAt: { $lt: new Date(now - ORPHAN_GRACE_MS) } },
            { status: "pending", attempts: { $gt: 0 }, lastAttemptAt: { $lt: new Date(now - settings.retryMaxMs - ORPHAN_GRACE_MS) } },
            { status: "delivering", lastAttemptAt: { $lt: new Date(now - deliveryLeaseMs(settings)) } },
          ],
        },
        { orderBy: { createdAt: "asc" }, limit: RECONCILE_BATCH },
      );
      return lost.map(refOf);
    },
    start: (delivery) => retries.start(delivery),
  };
}
