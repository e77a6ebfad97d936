// Webhook endpoints over the JSON face and typed RPC: idempotent creation (the replay/conflict matrix of spec rules
// 8-9), URL rules, listing without secrets, deletion with tombstones, the platform limit, and tenant isolation.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WebhookService } from "../../gen/mailbox/v1/webhook_service_pb.js";
import { WebhookEndpoint } from "../../src/db/entities/index.js";
import { startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ENDPOINT_LIMIT = 3;
const REPLAY_S = 3600;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ LIMIT_WEBHOOK_ENDPOINTS: String(ENDPOINT_LIMIT), WEBHOOK_SECRET_REPLAY_S: String(REPLAY_S) });
});
afterAll(() => app?.stop());

const newUrl = () => `https://hooks.example.com/${uniqueName("agent")}`;
const create = (tenant: Tenant, key: string, body: unknown) =>
  tenant.request("POST", "/v1/webhooks", { body, headers: { "idempotency-key": key } });
const endpoint = (url = newUrl()) => ({ url, events: ["message.received"] });

describe("POST /v1/webhooks", () => {
  test("creates an endpoint with 201 and its signing secret, and an exact retry answers 200 with the same id and secret", async () => {
    const tenant = await app.createTenant();
    const key = uniqueName("create");
    const body = endpoint();
    const first = await create(tenant, key, body);
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      id: expect.stringMatching(/^whk_[a-f0-9]{24}$/),
      url: body.url,
      events: ["message.received"],
      status: "active",
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: first.body.createdAt,
      signingSecret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      signingSecretReplayUntil: expect.stringMatching(ISO_MS),
      replayed: false,
    });
    expect(Date.parse(first.body.signingSecretReplayUntil) - Date.parse(first.body.createdAt)).toBe(REPLAY_S * 1000);

    const retry = await create(tenant, key, body);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ ...first.body, replayed: true });
  });

  test("treats a retry whose URL differs only in spelling (host case, explicit :443) as the same input", async () => {
    const tenant = await app.createTenant();
    const key = uniqueName("spelling");
    const path = uniqueName("p");
    const first = await create(tenant, key, endpoint(`https://Hooks.Example.com:443/${path}`));
    expect(first.status).toBe(201);
    expect(first.body.url).toBe(`https://hooks.example.com/${path}`);
    const retry = await create(tenant, key, endpoint(`https://hooks.example.com/${path}`));
    expect(retry.status).toBe(200);
    expect(retry.body.id).toBe(first.body.id);
  });

  test("answers 409 idempotency_key_conflict when the key is reused with another url", async () => {
    const tenant = await app.createTenant();
    const key = uniqueName("reuse");
    expect((await create(tenant, key, endpoint())).status).toBe(201);
    const other = await create(tenant, key, endpoint());
    expect(other.status).toBe(409);
    expect(other.body).toEqual({ error: "idempotency_key_conflict", message: expect.any(String) });
  });

  test("answers 409 webhook_endpoint_exists when the url is registered already, under a fresh key", async () => {
    const tenant = await app.createTenant();
    const body = endpoint();
    expect((await create(tenant, uniqueName("a"), body)).status).toBe(201);
    const again = await create(tenant, uniqueName("b"), body);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("webhook_endpoint_exists");
  });

  test("answers 409 webhook_secret_replay_expired for an exact retry after signingSecretReplayUntil", async () => {
    const tenant = await app.createTenant();
    const key = uniqueName("late");
    const body = endpoint();
    const first = await create(tenant, key, body);
    // As if the replay window had passed.
    await app.db.fork().nativeUpdate(WebhookEndpoint, { id: first.body.id }, { signingSecretReplayUntil: new Date(Date.now() - 1000) });
    const late = await create(tenant, key, body);
    expect(late.status).toBe(409);
    expect(late.body.error).toBe("webhook_secret_replay_expired");
    expect(JSON.stringify(late.body)).not.toContain(first.body.signingSecret);
  });

  test("answers 410 webhook_endpoint_deleted for a retry of a deleted endpoint, while a fresh key registers the url again", async () => {
    const tenant = await app.createTenant();
    const key = uniqueName("gone");
    const body = endpoint();
    const first = await create(tenant, key, body);
    expect((await tenant.request("DELETE", `/v1/webhooks/${first.body.id}`)).status).toBe(204);

    const retry = await create(tenant, key, body);
    expect(retry.status).toBe(410);
    expect(retry.body.error).toBe("webhook_endpoint_deleted");
    const fresh = await create(tenant, uniqueName("fresh"), body);
    expect(fresh.status).toBe(201);
    expect(fresh.body.id).not.toBe(first.body.id);
    expect(fresh.body.signingSecret).not.toBe(first.body.signingSecret);
  });

  test("makes exactly one endpoint of concurrent identical creates, each answered with its id and secret", async () => {
    const tenant = await app.createTenant();
    const key = uniqueName("race");
    const body = endpoint();
    const answers = await Promise.all(Array.from({ length: 8 }, () => create(tenant, key, body)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(new Set(answers.map((a) => a.body.signingSecret)).size).toBe(1);
    expect(await app.db.fork().count(WebhookEndpoint, { organization: tenant.organizationId })).toBe(1);
  });

  test("registers a url once when concurrent creates under different keys race for it", async () => {
    const tenant = await app.createTenant();
    const body = endpoint();
    const answers = await Promise.all(Array.from({ length: 3 }, (_, i) => create(tenant, uniqueName(`k${i}`), body)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409]);
    const refused = answers.filter((a) => a.status === 409).map((a) => a.body.error);
    expect(refused).toEqual(["webhook_endpoint_exists", "webhook_endpoint_exists"]);
  });

  test.each([
    ["http://hooks.example.com/x", "https://"],
    ["https://hooks.example.com:8443/x", "port 443"],
    ["https://user:secret@hooks.example.com/x", "credentials"],
    ["https://hooks.example.com/x#part", "fragment"],
    ["https://localhost/x", "public host name"],
    ["https://10.0.0.8/x", "private"],
    ["https://169.254.169.254/latest/meta-data", "link-local"],
    ["https://[::ffff:10.0.0.8]/x", "IPv4-mapped"],
  ])("refuses %s with 400", async (url, why) => {
    const tenant = await app.createTenant();
    const res = await create(tenant, uniqueName("bad"), endpoint(url));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
    expect(res.body.message).toContain(why);
  });

  test("refuses other events, a missing or malformed idempotency key, and a url over 2,048 characters with 400", async () => {
    const tenant = await app.createTenant();
    const cases = [
      await create(tenant, uniqueName("ev"), { url: newUrl(), events: ["message.sent"] }),
      await create(tenant, uniqueName("ev"), { url: newUrl(), events: ["message.received", "message.received"] }),
      await create(tenant, uniqueName("ev"), { url: newUrl(), events: [] }),
      await create(tenant, "short", endpoint()),
      await create(tenant, "has spaces in it", endpoint()),
      await tenant.request("POST", "/v1/webhooks", { body: endpoint() }),
      await create(tenant, uniqueName("long"), endpoint(`https://hooks.example.com/${"a".repeat(2030)}`)),
    ];
    expect(cases.map((c) => [c.status, c.body.error])).toEqual(Array(cases.length).fill([400, "invalid_request"]));
  });

  test("allows platformLimits.webhookEndpoints active endpoints, then 403 until one is deleted", async () => {
    const tenant = await app.createTenant();
    const created = [];
    for (let i = 0; i < ENDPOINT_LIMIT; i++) created.push((await create(tenant, uniqueName("lim"), endpoint())).body);
    const over = await create(tenant, uniqueName("over"), endpoint());
    expect(over.status).toBe(403);
    expect(over.body.error).toBe("webhook_endpoint_limit_reached");
    expect((await tenant.request("DELETE", `/v1/webhooks/${created[0].id}`)).status).toBe(204);
    expect((await create(tenant, uniqueName("room"), endpoint())).status).toBe(201);
  });

  test("is refused to a key without webhook:manage and to an inbox-restricted key", async () => {
    const tenant = await app.createTenant();
    const reader = await tenant.issueKey({ scopes: ["mailbox:read"] });
    const restricted = await tenant.issueKey({ scopes: ["webhook:manage"], inboxIds: ["inb_aaaaaaaaaaaaaaaaaaaaaaaa"] });
    const asReader = await tenant.request("POST", "/v1/webhooks", {
      body: endpoint(),
      headers: { "idempotency-key": uniqueName("s"), "x-api-key": reader.key },
    });
    expect([asReader.status, asReader.body.error]).toEqual([403, "missing_scope"]);
    const asRestricted = await tenant.request("POST", "/v1/webhooks", {
      body: endpoint(),
      headers: { "idempotency-key": uniqueName("s"), "x-api-key": restricted.key },
    });
    expect([asRestricted.status, asRestricted.body.error]).toEqual([403, "inbox_restricted"]);
  });
});

describe("GET /v1/webhooks", () => {
  test("lists active endpoints newest first, page by page, never with a secret", async () => {
    const tenant = await app.createTenant();
    const ids: string[] = [];
    for (let i = 0; i < ENDPOINT_LIMIT; i++) ids.push((await create(tenant, uniqueName("list"), endpoint())).body.id);
    expect((await tenant.request("DELETE", `/v1/webhooks/${ids[1]}`)).status).toBe(204);

    const first = await tenant.request("GET", "/v1/webhooks?limit=1");
    expect(first.status).toBe(200);
    expect(first.body.endpoints).toEqual([
      {
        id: ids[2],
        url: expect.any(String),
        events: ["message.received"],
        status: "active",
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      },
    ]);
    const second = await tenant.request("GET", `/v1/webhooks?limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body.endpoints.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
    expect(second.body.nextCursor).toBeNull();
    expect(JSON.stringify([first.body, second.body])).not.toMatch(/whsec_|signingSecret/);
  });
});

describe("DELETE /v1/webhooks/{webhookId}", () => {
  test("answers 204 with no body, then 404: a deleted endpoint is gone for its owner", async () => {
    const tenant = await app.createTenant();
    const { body } = await create(tenant, uniqueName("del"), endpoint());
    const del = await tenant.request("DELETE", `/v1/webhooks/${body.id}`);
    expect([del.status, del.body]).toEqual([204, ""]);
    expect((await tenant.request("DELETE", `/v1/webhooks/${body.id}`)).status).toBe(404);
    expect((await tenant.request("GET", "/v1/webhooks")).body.endpoints).toEqual([]);
  });
});

describe("tenant isolation", () => {
  test("another organization's endpoint is 404 to delete, invisible in lists, and its key and url are free to reuse", async () => {
    const owner = await app.createTenant();
    const other = await app.createTenant();
    const key = uniqueName("shared-key");
    const body = endpoint();
    const mine = await create(owner, key, body);

    const foreignDelete = await other.request("DELETE", `/v1/webhooks/${mine.body.id}`);
    expect([foreignDelete.status, foreignDelete.body.error]).toEqual([404, "not_found"]);
    expect((await other.request("GET", "/v1/webhooks")).body.endpoints).toEqual([]);
    // Idempotency keys and URLs are per organization: the same ones make a new endpoint, not a replay or conflict.
    const theirs = await create(other, key, body);
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect((await owner.request("GET", "/v1/webhooks")).body.endpoints.map((e: { id: string }) => e.id)).toEqual([mine.body.id]);
  });

  test("a cursor of another organization's list is 400 invalid_cursor", async () => {
    const owner = await app.createTenant();
    const other = await app.createTenant();
    for (let i = 0; i < 2; i++) await create(owner, uniqueName("cur"), endpoint());
    const { body } = await owner.request("GET", "/v1/webhooks?limit=1");
    const foreign = await other.request("GET", `/v1/webhooks?cursor=${encodeURIComponent(body.nextCursor)}`);
    expect([foreign.status, foreign.body.error]).toEqual([400, "invalid_cursor"]);
  });
});

describe("the RPC face", () => {
  test("creates, replays, lists and deletes through a typed Connect client, with the same error codes", async () => {
    const tenant = await app.createTenant();
    const client = tenant.connect(WebhookService);
    const req = { idempotencyKey: uniqueName("rpc"), url: newUrl(), events: ["message.received"] };
    const created = await client.createWebhook(req);
    expect(created.replayed).toBe(false);
    const replayed = await client.createWebhook(req);
    expect([replayed.id, replayed.signingSecret, replayed.replayed]).toEqual([created.id, created.signingSecret, true]);
    expect((await client.listWebhooks({})).endpoints.map((e) => e.id)).toEqual([created.id]);
    await client.deleteWebhook({ webhookId: created.id });
    const gone = await client.createWebhook(req).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(ConnectError);
    expect((gone as ConnectError).code).toBe(Code.FailedPrecondition);
    const missing = await client.deleteWebhook({ webhookId: created.id }).catch((e: unknown) => e);
    expect((missing as ConnectError).code).toBe(Code.NotFound);
  });
});
