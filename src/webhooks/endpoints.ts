// Webhook endpoints: idempotent creation (spec endpoint rules 8-9), listing without secrets, and deletion that
// leaves a tombstone and drops the endpoint's pending deliveries.
import { createHash } from "node:crypto";
import { LockMode } from "@mikro-orm/core";
import type { Principal } from "../auth/principal.js";
import { requireUnrestrictedInboxes } from "../auth/principal.js";
import { WebhookDelivery, WebhookEndpoint } from "../db/entities/index.js";
import type { WebhookEndpointRow } from "../db/entities/webhook-endpoint.js";
import type { TenantStore } from "../db/tenant-store.js";
import { Conflict, Gone, NotFound } from "../errors.js";
import { newId } from "../ids.js";
import type { CursorCodec } from "../pagination/cursor.js";
import { newestFirstPage, type Page, type PageRequest } from "../pagination/keyset.js";
import { ENDPOINT_DELETED, inFlightDeliveries } from "./deliveries.js";
import { newSigningSecret } from "./signature.js";
import { normalizeWebhookUrl, type AddressPolicy } from "./url-policy.js";

export interface WebhookEndpointsDeps {
  /** platformLimits.webhookEndpoints: active endpoints per organization. */
  readonly endpointLimit: number;
  /** How long an exact retry of a create returns the secret again. */
  readonly secretReplayMs: number;
  /** How long a delivery's claim holds: deletion answers 409 while a claim that recent exists. */
  readonly deliveryLeaseMs: number;
  readonly addressPolicy: AddressPolicy;
  readonly cursors: CursorCodec;
}

export interface CreateWebhookInput {
  readonly idempotencyKey: string;
  readonly url: string;
  readonly events: readonly string[];
}

export interface CreatedWebhook {
  readonly endpoint: WebhookEndpointRow;
  /** True when this answers an exact retry of an earlier create. */
  readonly replayed: boolean;
}

export type WebhookEndpoints = ReturnType<typeof createWebhookEndpoints>;

export function createWebhookEndpoints(deps: WebhookEndpointsDeps) {
  /** What an earlier create with the same key means for this one. */
  function replay(existing: WebhookEndpointRow, requestHash: string): CreatedWebhook {
    if (existing.requestHash !== requestHash) {
      throw new Conflict("idempotency_key_conflict", "this idempotency key was used with a different url or events");
    }
    if (existing.status === "deleted") {
      throw new Gone("webhook_endpoint_deleted", "the endpoint created with this idempotency key was deleted; use a fresh key");
    }
    if (Date.now() > existing.signingSecretReplayUntil.getTime()) {
      throw new Conflict("webhook_secret_replay_expired", "the signing secret is no longer returned for this idempotency key");
    }
    return { endpoint: existing, replayed: true };
  }

  /**
   * Creates the endpoint, or answers a create with the same key that won a race: concurrent creates of one
   * organization run one at a time under its lock, so the first with a key inserts and the rest find its endpoint.
   * A url taken by another active endpoint is the unique index's to decide (409 webhook_endpoint_exists).
   */
  function insert(store: TenantStore, input: CreateWebhookInput, url: string, requestHash: string): Promise<CreatedWebhook> {
    const limit = {
      entity: WebhookEndpoint,
      counted: { status: "active" },
      max: deps.endpointLimit,
      noun: "webhook endpoints",
      errorCode: "webhook_endpoint_limit_reached",
    };
    return store.createWithinLimit(limit, async (tx) => {
      const winner = await tx.findOne(WebhookEndpoint, { idempotencyKey: input.idempotencyKey });
      if (winner) return replay(winner, requestHash);
      const now = new Date();
      const endpoint = tx.create(WebhookEndpoint, {
        id: newId("whk"),
        url,
        events: [...input.events],
        status: "active",
        signingSecret: newSigningSecret(),
        signingSecretReplayUntil: new Date(now.getTime() + deps.secretReplayMs),
        idempotencyKey: input.idempotencyKey,
        requestHash,
        createdAt: now,
        updatedAt: now,
        deletedAt: null,
      });
      return { endpoint, replayed: false };
    });
  }

  return {
    async create(store: TenantStore, principal: Principal, input: CreateWebhookInput): Promise<CreatedWebhook> {
      requireUnrestrictedInboxes(principal, "manage webhook endpoints");
      const url = normalizeWebhookUrl(input.url, deps.addressPolicy);
      const requestHash = createHash("sha256").update(JSON.stringify({ url, events: input.events })).digest("hex");
      // A retry is answered without taking the organization's lock.
      const earlier = await store.findOne(WebhookEndpoint, { idempotencyKey: input.idempotencyKey });
      if (earlier) return replay(earlier, requestHash);
      return insert(store, input, url, requestHash);
    },

    list(store: TenantStore, page: PageRequest): Promise<Page<WebhookEndpointRow>> {
      return newestFirstPage(store, deps.cursors, { entity: WebhookEndpoint, resource: "webhooks", where: { status: "active" } }, page);
    },

    async delete(store: TenantStore, principal: Principal, webhookId: string): Promise<void> {
      requireUnrestrictedInboxes(principal, "manage webhook endpoints");
      await store.transactional(async (tx) => {
        // Locked before its deliveries, as a delivery attempt locks them (see deliveries.ts claim).
        const [endpoint] = await tx.find(WebhookEndpoint, { id: webhookId, status: "active" }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!endpoint) throw new NotFound("webhook endpoint");
        if ((await tx.count(WebhookDelivery, inFlightDeliveries(webhookId, deps.deliveryLeaseMs))) > 0) {
          throw new Conflict("webhook_delivery_in_progress", "a delivery to this endpoint is in flight; retry the delete shortly");
        }
        const now = new Date();
        Object.assign(endpoint, { status: "deleted", deletedAt: now, updatedAt: now });
        await tx.nativeUpdate(
          WebhookDelivery,
          { endpointId: webhookId, status: "pending" },
          { status: "failed", lastError: ENDPOINT_DELETED, updatedAt: now },
        );
      });
    },
  };
}
