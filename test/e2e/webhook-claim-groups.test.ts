// Claims that come together go in one transaction (src/webhooks/deliveries.ts): each delivery of the group still gets
// its own answer — a pending one is claimed and sent once, one whose endpoint was deleted is dropped unsent, one
// another attempt holds is busy and left alone, and the same delivery asked for twice is claimed once.
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Database } from "../../src/db/database.js";
import { WebhookDelivery } from "../../src/db/entities/index.js";
import { newId, newUuid } from "../../src/ids.js";
import { createWebhookDeliverer, ENDPOINT_DELETED } from "../../src/webhooks/deliveries.js";
import { startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { startHttpsReceiver, type HttpsReceiver } from "../support/https-receiver.js";

let receiver: HttpsReceiver;
let app: TestApp;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  app = await startTestApp({ WEBHOOK_ALLOW_HOSTS: receiver.host });
});
afterAll(async () => {
  await app?.stop();
  await receiver?.close();
});

async function register(tenant: Tenant, url: string): Promise<string> {
  const res = await tenant.request("POST", "/v1/webhooks", {
    body: { url, events: ["message.received"] },
    headers: { "idempotency-key": uniqueName("hook") },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** A committed outbox row for `endpointId`, in the given state. */
async function delivery(tenant: Tenant, endpointId: string, state: { status: string; attempts: number; lastAttemptAt: Date | null }): Promise<string> {
  const id = newUuid();
  const eventId = newId("evt");
  const payload = JSON.stringify({ id: eventId, type: "message.received", createdAt: new Date().toISOString(), data: { messageId: newId("msg") } });
  await app.db.sql.query(
    `insert into webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, status, attempts, last_error, last_attempt_at, created_at, updated_at)
     values ($1, $2, $3, $4, 'message.received', $5, $6, $7, null, $8, now(), now())`,
    [id, tenant.organizationId, endpointId, eventId, payload, state.status, state.attempts, state.lastAttemptAt],
  );
  return id;
}

test("claims asked for together go in one transaction, and each delivery gets its own answer", async () => {
  const tenant = await app.createTenant();
  const target = receiver.endpoint();
  const active = await register(tenant, target.url);
  const gone = receiver.endpoint();
  const deleted = await register(tenant, gone.url);
  const pending = () => delivery(tenant, active, { status: "pending", attempts: 0, lastAttemptAt: null });
  const due = [await pending(), await pending(), await pending(), await pending()];
  const orphaned = await delivery(tenant, deleted, { status: "pending", attempts: 0, lastAttemptAt: null });
  const held = await delivery(tenant, active, { status: "delivering", attempts: 1, lastAttemptAt: new Date() });
  // Deleted behind the API's back, so its pending row is still there for the claim to find.
  await app.db.sql.query(`update webhook_endpoints set status = 'deleted', deleted_at = now() where id = $1`, [deleted]);

  let transactions = 0;
  const counting: Database = {
    ...app.db,
    sql: Object.assign(Object.create(app.db.sql) as Database["sql"], {
      transaction: ((fn, options) => {
        transactions++;
        return app.db.sql.transaction(fn, options);
      }) satisfies Database["sql"]["transaction"],
    }),
  };
  const deliverer = createWebhookDeliverer(counting, app.config.webhooks);
  const asked = [...due, orphaned, held, due[3]!];
  const results = await Promise.all(asked.map((id) => deliverer.attempt(id)));

  // Two claims may run at once; everything asked for while they ran went in one more.
  expect(transactions).toBeLessThanOrEqual(3);
  expect(results).toEqual([
    ...due.slice(0, 3).map(() => ({ outcome: "delivered", attempts: 1 })),
    expect.objectContaining({ attempts: 1 }),
    { outcome: "failed", attempts: 0 },
    { outcome: "busy", attempts: 1 },
    expect.objectContaining({ attempts: 1 }),
  ]);
  // The fourth was asked for twice: one of the two sent it, the other found it busy.
  expect([results[3]!.outcome, results[6]!.outcome].sort()).toEqual(["busy", "delivered"]);
  expect(target.requests).toHaveLength(4);
  expect(new Set(target.requests.map((r) => r.headers["webhook-id"])).size).toBe(4);
  expect(gone.requests).toHaveLength(0);

  const rows = new Map((await app.db.fork().find(WebhookDelivery, { id: [...due, orphaned, held] })).map((r) => [r.id, r]));
  for (const id of due) expect([rows.get(id)!.status, rows.get(id)!.attempts]).toEqual(["delivered", 1]);
  expect([rows.get(orphaned)!.status, rows.get(orphaned)!.lastError]).toEqual(["failed", ENDPOINT_DELETED]);
  expect([rows.get(held)!.status, rows.get(held)!.attempts]).toEqual(["delivering", 1]);
});
