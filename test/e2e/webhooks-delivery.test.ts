// Delivery of message.received to a real HTTPS receiver on port 443: the signature and payload a receiver checks,
// retries in a real Temporal workflow, drops, deletion while in flight, and recovery of deliveries whose process
// died. Messages are stored through the ORM and announced through the outbox, as inbound processing does.
import { WorkflowNotFoundError } from "@temporalio/client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Message, Thread, WebhookDelivery } from "../../src/db/entities/index.js";
import { newId } from "../../src/ids.js";
import { messageReceivedEvents, type MessageReceivedEvent } from "../../src/events/message-received.js";
import { createLogger } from "../../src/logger.js";
import { createWebhookRetryStarter, webhookDeliveryWorkflowId } from "../../src/temporal/client.js";
import { reconcile } from "../../src/jobs/periodic-jobs.js";
import { createWebhookDeliverer, ENDPOINT_DELETED, webhookDeliveryReconciler } from "../../src/webhooks/deliveries.js";
import { createConfiguredOutbox, createWebhookOutbox, type EnqueuedDelivery, type WebhookOutbox } from "../../src/webhooks/outbox.js";
import { SEARCH_ATTRIBUTE } from "../../src/temporal/search-attributes.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { startHttpsReceiver, verifySignature, type Answer, type HttpsReceiver } from "../support/https-receiver.js";

const MAX_ATTEMPTS = 3;
const TIMEOUT_MS = 1500;

let receiver: HttpsReceiver;
let app: TestApp;
let worker: { stop(): Promise<void> };
let outbox: WebhookOutbox;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  app = await startTestApp({
    WEBHOOK_ALLOW_HOSTS: receiver.host,
    WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    // Retries within a second, so the schedule runs in the test's time.
    WEBHOOK_RETRY_INITIAL_MS: "300",
    WEBHOOK_RETRY_MAX_MS: "1000",
  });
  worker = await app.startWorker();
  outbox = createConfiguredOutbox(app.config, app.db, createWebhookRetryStarter(app.temporal, app.config.temporalTaskQueue, app.config.webhooks), createLogger("error"));
});
afterAll(async () => {
  await outbox?.drain();
  await worker?.stop();
  await app?.stop();
  await receiver?.close();
});

interface Registered {
  readonly id: string;
  readonly secret: string;
}

async function register(tenant: Tenant, url: string): Promise<Registered> {
  const res = await tenant.request("POST", "/v1/webhooks", {
    body: { url, events: ["message.received"] },
    headers: { "idempotency-key": uniqueName("hook") },
  });
  expect(res.status).toBe(201);
  return { id: res.body.id, secret: res.body.signingSecret };
}

/** Stores an inbound message, then enqueues its event (inbound processing does both in one transaction). */
async function receiveMessage(tenant: Tenant, via: WebhookOutbox = outbox): Promise<{ event: MessageReceivedEvent; enqueued: EnqueuedDelivery[]; deliveryIds: string[] }> {
  const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("hooked"), displayName: "Hooked" } });
  const event = await app.db.fork().transactional(async (em) => {
    const now = new Date();
    const event = { organizationId: tenant.organizationId, inboxId: inbox.body.id, threadId: newId("thr"), messageId: newId("msg") };
    em.create(Thread, {
      id: event.threadId,
      organization: tenant.organizationId,
      inboxId: event.inboxId,
      subject: "Quarterly numbers",
      participants: ["cfo@example.net", inbox.body.address],
      messageCount: 1,
      lastMessageAt: now,
      createdAt: now,
      updatedAt: now,
    });
    em.create(Message, {
      id: event.messageId,
      organization: tenant.organizationId,
      inboxId: event.inboxId,
      threadId: event.threadId,
      direction: "inbound",
      internetMessageId: `<${uniqueName("m")}@example.net>`,
      inReplyTo: null,
      references: [],
      from: { email: "cfo@example.net", name: "The CFO" },
      to: [{ email: inbox.body.address }],
      replyTo: null,
      subject: "Quarterly numbers",
      text: "Confidential figures attached.",
      html: null,
      metadata: {},
      deliveryStatus: "received",
      submissionId: null,
      failureCode: null,
      inboundSecurity: { remoteIp: "192.0.2.1", helo: "mx.example.net", tls: { encrypted: false, protocol: null, cipher: null } },
      attachmentsScanState: null,
      rawId: null,
      parseProblem: null,
      createdAt: now,
      updatedAt: now,
    });
    await em.flush();
    return event;
  });
  const enqueued = await app.db.sql.transaction((tx) => via.enqueue(tx, messageReceivedEvents([event], new Date())));
  return { event, enqueued, deliveryIds: enqueued.map((d) => d.ref.deliveryId) };
}

const deliveryRow = (id: string) => app.db.fork().findOneOrFail(WebhookDelivery, id);
const settled = (id: string) =>
  eventually(async () => {
    const row = await deliveryRow(id);
    return row.status === "delivered" || row.status === "failed" ? row : undefined;
  });

describe("message.received delivery", () => {
  test("reaches a real HTTPS receiver on its first attempt, signed, with exactly the spec's payload and no workflow", async () => {
    const tenant = await app.createTenant();
    const target = receiver.endpoint();
    const hook = await register(tenant, target.url);
    const { event, enqueued, deliveryIds } = await receiveMessage(tenant);
    outbox.dispatch(enqueued);

    const [req] = await target.waitFor(1);
    expect(req!.method).toBe("POST");
    expect(req!.headers["content-type"]).toBe("application/json");
    expect(verifySignature(hook.secret, req!)).toBe(true);
    // Another secret (its first character changed, never to itself) does not verify the signature.
    const otherSecret = hook.secret.replace(/^whsec_(.)/, (_, c: string) => `whsec_${c === "A" ? "B" : "A"}`);
    expect(verifySignature(otherSecret, req!)).toBe(false);
    const payload = JSON.parse(req!.body);
    expect(payload).toEqual({
      id: expect.stringMatching(/^evt_[a-f0-9]{24}$/),
      type: "message.received",
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      data: { messageId: event.messageId, inboxId: event.inboxId, threadId: event.threadId },
    });
    expect(req!.headers["webhook-id"]).toBe(payload.id);
    expect(req!.body).not.toMatch(/Quarterly|cfo@|Confidential/);

    const row = await settled(deliveryIds[0]!);
    expect([row.status, row.attempts, row.lastError]).toEqual(["delivered", 1, null]);
    const handle = app.temporal.workflow.getHandle(webhookDeliveryWorkflowId(hook.id, payload.id));
    await expect(handle.describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });

  test("retries a receiver that fails twice, then succeeds, with the same event id and body on every attempt", async () => {
    const tenant = await app.createTenant();
    const target = receiver.endpoint((n) => (n < 2 ? 500 : 204));
    const hook = await register(tenant, target.url);
    const { event, enqueued, deliveryIds } = await receiveMessage(tenant);
    outbox.dispatch(enqueued);

    const attempts = await target.waitFor(3);
    expect(new Set(attempts.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(new Set(attempts.map((r) => r.body)).size).toBe(1);
    expect(attempts.every((r) => verifySignature(hook.secret, r))).toBe(true);
    const row = await settled(deliveryIds[0]!);
    expect([row.status, row.attempts]).toEqual(["delivered", 3]);

    // The retries ran in a workflow named by endpoint and event, findable by organization and inbox.
    const handle = app.temporal.workflow.getHandle(webhookDeliveryWorkflowId(hook.id, row.eventId));
    expect(await handle.result()).toEqual({ outcome: "delivered", attempts: 3 });
    const { searchAttributes } = await handle.describe();
    expect(searchAttributes[SEARCH_ATTRIBUTE.organizationId]).toEqual([tenant.organizationId]);
    expect(searchAttributes[SEARCH_ATTRIBUTE.inboxId]).toEqual([event.inboxId]);
    // The attempts ran as local activities (markers in the history), not as dispatched activity tasks.
    const { events } = await handle.fetchHistory();
    expect(events!.filter((e) => e.markerRecordedEventAttributes?.markerName === "core_local_activity").length).toBe(2);
    expect(events!.some((e) => e.activityTaskScheduledEventAttributes)).toBe(false);
    await target.waitFor(4, 1500).then(
      () => expect.fail("a delivered event was sent again"),
      () => undefined,
    );
  });

  test("drops a delivery after WEBHOOK_MAX_ATTEMPTS failures, and never follows a redirect", async () => {
    const tenant = await app.createTenant();
    const elsewhere = receiver.endpoint();
    const target = receiver.endpoint(() => ({ status: 302, headers: { location: elsewhere.url } }));
    await register(tenant, target.url);
    const { enqueued, deliveryIds } = await receiveMessage(tenant);
    outbox.dispatch(enqueued);

    const row = await settled(deliveryIds[0]!);
    expect([row.status, row.attempts, row.lastError]).toEqual(["failed", MAX_ATTEMPTS, "HTTP 302 (redirects are not followed)"]);
    expect(target.requests).toHaveLength(MAX_ATTEMPTS);
    expect(elsewhere.requests).toHaveLength(0);
  });

  test("counts a receiver that does not answer within WEBHOOK_TIMEOUT_MS as a failed attempt", async () => {
    const tenant = await app.createTenant();
    const slowOnce: Answer = (n) => (n === 0 ? new Promise((r) => setTimeout(() => r(204), TIMEOUT_MS + 1000)) : 204);
    const target = receiver.endpoint(slowOnce);
    await register(tenant, target.url);
    const { enqueued, deliveryIds } = await receiveMessage(tenant);
    outbox.dispatch(enqueued);

    await target.waitFor(2);
    const row = await settled(deliveryIds[0]!);
    expect([row.status, row.attempts]).toEqual(["delivered", 2]);
  });

  test("sends one event to every active endpoint of the organization under one event id, each signed with its own secret", async () => {
    const tenant = await app.createTenant();
    const bystander = await app.createTenant();
    const [a, b, foreign] = [receiver.endpoint(), receiver.endpoint(), receiver.endpoint()];
    const hookA = await register(tenant, a.url);
    const hookB = await register(tenant, b.url);
    const hookForeign = await register(bystander, foreign.url);
    const { enqueued, deliveryIds } = await receiveMessage(tenant);
    expect(deliveryIds).toHaveLength(2);
    outbox.dispatch(enqueued);

    const [[reqA], [reqB]] = await Promise.all([a.waitFor(1), b.waitFor(1)]);
    expect(reqA!.headers["webhook-id"]).toBe(reqB!.headers["webhook-id"]);
    expect(reqA!.body).toBe(reqB!.body);
    expect([verifySignature(hookA.secret, reqA!), verifySignature(hookB.secret, reqB!)]).toEqual([true, true]);
    expect(verifySignature(hookB.secret, reqA!)).toBe(false);
    expect(verifySignature(hookForeign.secret, reqA!)).toBe(false);
    expect(foreign.requests).toHaveLength(0);
  });

  test("never attempts an endpoint outside WEBHOOK_ALLOW_HOSTS that the policy refuses, even if stored", async () => {
    const tenant = await app.createTenant();
    const target = receiver.endpoint();
    await register(tenant, target.url);
    const { enqueued, deliveryIds } = await receiveMessage(tenant);
    // A deliverer of a deployment without the test exemption: the receiver's loopback address is refused.
    const strict = createWebhookDeliverer(app.db, { ...app.config.webhooks, allowHosts: [], maxAttempts: 1 });
    expect(await strict.complete(deliveryIds[0]!, enqueued[0]!.claim!)).toEqual({ outcome: "failed", attempts: 1 });
    expect((await deliveryRow(deliveryIds[0]!)).lastError).toBe(`${receiver.host} is not a public address (loopback)`);
    expect(target.requests).toHaveLength(0);
  });
});

describe("prompt attempt slots", () => {
  test("a delivery enqueued while every slot is taken waits for one and is sent from this process, without a workflow", async () => {
    const oneSlot = createWebhookOutbox({
      db: app.db,
      deliverer: createWebhookDeliverer(app.db, app.config.webhooks),
      retries: createWebhookRetryStarter(app.temporal, app.config.temporalTaskQueue, app.config.webhooks),
      log: createLogger("error"),
      promptAttempts: 1,
    });
    const tenant = await app.createTenant();
    let release!: () => void;
    const released = new Promise<number>((r) => (release = () => r(204)));
    const target = receiver.endpoint((n) => (n === 0 ? released : 204));
    const hook = await register(tenant, target.url);
    const first = await receiveMessage(tenant, oneSlot);
    expect(first.enqueued[0]!.claim).not.toBeNull();
    oneSlot.dispatch(first.enqueued);
    await target.waitFor(1);
    // The one slot is taken: the next delivery is committed unclaimed and waits.
    const second = await receiveMessage(tenant, oneSlot);
    expect(second.enqueued[0]!.claim).toBeNull();
    oneSlot.dispatch(second.enqueued);
    await new Promise((r) => setTimeout(r, 300));
    expect(target.requests).toHaveLength(1);
    release();
    await target.waitFor(2);
    const row = await settled(second.deliveryIds[0]!);
    expect([row.status, row.attempts]).toEqual(["delivered", 1]);
    await oneSlot.drain();
    const handle = app.temporal.workflow.getHandle(webhookDeliveryWorkflowId(hook.id, second.enqueued[0]!.ref.eventId));
    await expect(handle.describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });
});

describe("deleting an endpoint", () => {
  test("answers 409 while a delivery to it is in flight, and 204 once the receiver has answered", async () => {
    const tenant = await app.createTenant();
    let release!: () => void;
    const released = new Promise<number>((r) => (release = () => r(204)));
    const target = receiver.endpoint(() => released);
    const hook = await register(tenant, target.url);
    const { enqueued, deliveryIds } = await receiveMessage(tenant);
    outbox.dispatch(enqueued);
    await target.waitFor(1);

    const busy = await tenant.request("DELETE", `/v1/webhooks/${hook.id}`);
    expect([busy.status, busy.body.error]).toEqual([409, "webhook_delivery_in_progress"]);
    release();
    expect((await settled(deliveryIds[0]!)).status).toBe("delivered");
    expect((await tenant.request("DELETE", `/v1/webhooks/${hook.id}`)).status).toBe(204);
  });

  test("drops its pending deliveries: they are never sent", async () => {
    const tenant = await app.createTenant();
    const target = receiver.endpoint();
    const hook = await register(tenant, target.url);
    const { enqueued, deliveryIds } = await receiveMessage(tenant);
    // Enqueued while every prompt attempt slot was taken: pending for its workflow, not claimed.
    await app.db.fork().nativeUpdate(WebhookDelivery, { id: deliveryIds[0] }, { status: "pending", attempts: 0, lastAttemptAt: null });
    expect((await tenant.request("DELETE", `/v1/webhooks/${hook.id}`)).status).toBe(204);

    const row = await deliveryRow(deliveryIds[0]!);
    expect([row.status, row.attempts, row.lastError]).toEqual(["failed", 0, ENDPOINT_DELETED]);
    outbox.dispatch(enqueued.map((d) => ({ ref: { ...d.ref, attempts: 0 }, claim: null })));
    await outbox.drain();
    expect(target.requests).toHaveLength(0);
  });
});

describe("crash safety", () => {
  const retries = () => createWebhookRetryStarter(app.temporal, app.config.temporalTaskQueue, app.config.webhooks);

  test("delivers an event whose dispatch was lost (the process died after the commit) through the reconciler", async () => {
    const tenant = await app.createTenant();
    const target = receiver.endpoint();
    const hook = await register(tenant, target.url);
    const { deliveryIds } = await receiveMessage(tenant);
    // Enqueued without a free prompt slot, never dispatched: as if the process had died a few minutes ago, right
    // after committing the message and before starting the delivery's workflow.
    await app.db
      .fork()
      .nativeUpdate(WebhookDelivery, { id: deliveryIds[0] }, { status: "pending", attempts: 0, lastAttemptAt: null, createdAt: new Date(Date.now() - 5 * 60_000) });

    expect(await reconcile(webhookDeliveryReconciler(app.db, retries(), app.config.webhooks))).toBeGreaterThanOrEqual(1);
    const [req] = await target.waitFor(1);
    expect(verifySignature(hook.secret, req!)).toBe(true);
    const row = await settled(deliveryIds[0]!);
    expect([row.status, row.attempts]).toEqual(["delivered", 1]);
  });

  test("finishes a delivery whose process died mid-attempt, once the attempt's lease has run out", async () => {
    const tenant = await app.createTenant();
    const target = receiver.endpoint();
    await register(tenant, target.url);
    const { deliveryIds } = await receiveMessage(tenant);
    // The prompt attempt claimed the row in the message's transaction, and its process died long ago.
    const longAgo = new Date(Date.now() - 10 * 60_000);
    const claimedAndAbandoned = { status: "delivering", attempts: 1, lastAttemptAt: longAgo, createdAt: longAgo };
    await app.db.fork().nativeUpdate(WebhookDelivery, { id: deliveryIds[0] }, claimedAndAbandoned);

    expect(await reconcile(webhookDeliveryReconciler(app.db, retries(), app.config.webhooks))).toBeGreaterThanOrEqual(1);
    await target.waitFor(1);
    const row = await settled(deliveryIds[0]!);
    expect([row.status, row.attempts]).toEqual(["delivered", 2]);
  });
});
