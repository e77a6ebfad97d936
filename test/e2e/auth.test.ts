// The auth matrix (401 unusable key, 403 scope or policy) and key restrictions. Cross-tenant isolation over every
// route with an id is test/e2e/tenant-matrix.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { revokeKey, rotateKey, updateKey } from "../../src/admin/api-keys.js";
import { updateOrganization } from "../../src/admin/organizations.js";
import { startTestApp, uniqueName, type TestApp } from "../support/harness.js";

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.stop());

const newInbox = async (tenant: Awaited<ReturnType<TestApp["createTenant"]>>) =>
  (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("auth"), displayName: "A" } })).body.id as string;

describe("401: the key is unusable from this caller", () => {
  test.each([
    ["no key", undefined],
    ["a malformed key", "not-a-key"],
    ["an unknown well-formed key", `mbx_0123456789abcdef_${"A".repeat(43)}`],
  ])("with %s", async (_what, key) => {
    const tenant = await app.createTenant();
    const headers: Record<string, string> = key === undefined ? {} : { "x-api-key": key };
    const res = await fetch(`${app.baseUrl}/v1/me`, { headers });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: "unauthenticated", message: expect.any(String) });
    expect(tenant.key).toBeTruthy();
  });

  test("with the right lookup id but a wrong secret", async () => {
    const tenant = await app.createTenant();
    const wrong = tenant.key.slice(0, -4) + (tenant.key.endsWith("AAAA") ? "BBBB" : "AAAA");
    expect((await tenant.request("GET", "/v1/me", { headers: { "x-api-key": wrong } })).status).toBe(401);
  });

  test("with an expired key", async () => {
    const tenant = await app.createTenant({ restrictions: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await tenant.request("GET", "/v1/me")).status).toBe(401);
  });

  test("with a revoked key", async () => {
    const tenant = await app.createTenant();
    expect((await tenant.request("GET", "/v1/me")).status).toBe(200);
    await revokeKey(app.db.fork(), tenant.keyId);
    expect((await tenant.request("GET", "/v1/me")).status).toBe(401);
  });

  test("from an address outside allowedIps (exact match)", async () => {
    const denied = await app.createTenant({ restrictions: { allowedIps: ["127.0.0.2"] } });
    expect((await denied.request("GET", "/v1/me")).status).toBe(401);
    const allowed = await app.createTenant({ restrictions: { allowedIps: ["127.0.0.1"] } });
    expect((await allowed.request("GET", "/v1/me")).status).toBe(200);
  });

  test("with a rotated key's old secret after the overlap, while the new secret works", async () => {
    const tenant = await app.createTenant();
    const { secret } = await rotateKey(app.db.fork(), tenant.keyId, 60_000);
    expect((await tenant.request("GET", "/v1/me")).status).toBe(200); // old secret, inside the overlap
    expect((await tenant.request("GET", "/v1/me", { headers: { "x-api-key": secret } })).status).toBe(200);
    await rotateKey(app.db.fork(), tenant.keyId, 0);
    expect((await tenant.request("GET", "/v1/me")).status).toBe(401); // two rotations back
    expect((await tenant.request("GET", "/v1/me", { headers: { "x-api-key": secret } })).status).toBe(401);
  });
});

describe("403: authenticated but blocked", () => {
  test("a key without the route's scope; GET /v1/me needs none", async () => {
    const tenant = await app.createTenant({ scopes: ["validation:use"] });
    expect((await tenant.request("GET", "/v1/me")).status).toBe(200);
    const res = await tenant.request("GET", "/v1/inboxes");
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("missing_scope");
    const create = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "x", displayName: "X" } });
    expect(create.status).toBe(403);
  });

  test("mailbox:read lists but cannot create; mailbox:manage creates", async () => {
    const tenant = await app.createTenant({ scopes: ["mailbox:read"] });
    expect((await tenant.request("GET", "/v1/inboxes")).status).toBe(200);
    const manager = await tenant.issueKey({ scopes: ["mailbox:manage"] });
    const res = await tenant.request("POST", "/v1/inboxes", {
      body: { localPart: uniqueName("m"), displayName: "M" },
      headers: { "x-api-key": manager.key },
    });
    expect(res.status).toBe(201);
  });

  test("a suspended organization, with a documented code", async () => {
    const tenant = await app.createTenant();
    await updateOrganization(app.db.fork(), tenant.organizationId, { status: "suspended" });
    const res = await tenant.request("GET", "/v1/me");
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("organization_inactive");
  });
});

describe("inbox restrictions of a key", () => {
  test("a restricted key sees only its inboxes and gets 404 for others", async () => {
    const tenant = await app.createTenant();
    const mine = await newInbox(tenant);
    const other = await newInbox(tenant);
    const restricted = await tenant.issueKey({ scopes: ["*"], inboxIds: [mine] });
    const headers = { "x-api-key": restricted.key };
    const list = await tenant.request("GET", "/v1/inboxes", { headers });
    expect(list.body.inboxes.map((i: { id: string }) => i.id)).toEqual([mine]);
    expect((await tenant.request("GET", `/v1/inboxes/${mine}`, { headers })).status).toBe(200);
    expect((await tenant.request("GET", `/v1/inboxes/${other}`, { headers })).status).toBe(404);
    expect((await tenant.request("DELETE", `/v1/inboxes/${other}`, { headers })).status).toBe(404);
    const create = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("r"), displayName: "R" }, headers });
    expect(create.status).toBe(403);
  });

  test("a restricted key cannot register a domain (403 inbox_restricted) but can list the organization's domains", async () => {
    const tenant = await app.createTenant();
    const restricted = await tenant.issueKey({ scopes: ["*"], inboxIds: [await newInbox(tenant)] });
    const headers = { "x-api-key": restricted.key };
    const registered = await tenant.request("POST", "/v1/domains", { body: { domain: `${uniqueName("org")}.example.com` } });
    expect(registered.status).toBe(201);
    const refused = await tenant.request("POST", "/v1/domains", { body: { domain: `${uniqueName("restricted")}.example.com` }, headers });
    expect([refused.status, refused.body.error]).toEqual([403, "inbox_restricted"]);
    const list = await tenant.request("GET", "/v1/domains", { headers });
    expect([list.status, list.body.domains.map((d: { id: string }) => d.id)]).toEqual([200, [registered.body.id]]);
  });

  test("a restriction added by the operator applies on the next request", async () => {
    const tenant = await app.createTenant();
    const inbox = await newInbox(tenant);
    await updateKey(app.db.fork(), tenant.keyId, { inboxIds: ["inb_000000000000000000000000"] });
    expect((await tenant.request("GET", `/v1/inboxes/${inbox}`)).status).toBe(404);
  });
});
