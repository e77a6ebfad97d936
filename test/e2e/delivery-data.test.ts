// Delivery data over the JSON face and typed RPC: metrics of seeded submissions (counts, rates, latency
// percentiles, the window), the suppression list (pages, removal, its errors), complaints, the scopes of each
// operation, and tenant isolation.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DeliveryService } from "../../gen/mailbox/v1/delivery_service_pb.js";
import { Suppression } from "../../src/db/entities/index.js";
import { seedComplaint, seedSubmission, seedSuppression } from "../support/delivery-rows.js";
import { startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HOUR = 3_600_000;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.stop());

const ago = (ms: number) => new Date(Date.now() - ms);

/** Everything read back from a list, following nextCursor. */
async function allPages(tenant: Tenant, path: string, field: string, limit: number): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const query: string = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const res = await tenant.request("GET", path + query);
    expect(res.status).toBe(200);
    expect(res.body[field].length).toBeLessThanOrEqual(limit);
    items.push(...res.body[field]);
    cursor = res.body.nextCursor;
    pages++;
  } while (cursor !== null);
  return { items, pages };
}

describe("GET /v1/metrics/delivery", () => {
  test("answers zeros, zero rates and null percentiles over the default 24 hours for an organization that sent nothing", async () => {
    const tenant = await app.createTenant();
    const before = Date.now();
    const res = await tenant.request("GET", "/v1/metrics/delivery");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      hours: 24,
      since: expect.stringMatching(ISO_MS),
      counts: { submitted: 0, delivered: 0, deferred: 0, bounced: 0, failed: 0, complaints: 0 },
      bounceRate: 0,
      deferralRate: 0,
      complaintRate: 0,
      latency: { p50Ms: null, p90Ms: null, p99Ms: null },
    });
    const since = Date.parse(res.body.since);
    expect(since).toBeGreaterThanOrEqual(before - 24 * HOUR - 1);
    expect(since).toBeLessThanOrEqual(Date.now() - 24 * HOUR);
  });

  test("counts the recipients of the submissions created in the window by state, with rates and interpolated latency percentiles", async () => {
    const tenant = await app.createTenant();
    const other = await app.createTenant();
    const { db } = app;
    const org = tenant.organizationId;
    await seedSubmission(db, org, {
      createdAt: ago(1 * HOUR),
      recipients: [
        { status: "delivered", latencyMs: 1_000 },
        { status: "delivered", latencyMs: 2_000 },
        { status: "deferred" },
        { status: "bounced" },
      ],
    });
    await seedSubmission(db, org, {
      createdAt: ago(2 * HOUR),
      recipients: [{ status: "delivered", latencyMs: 3_000 }, { status: "failed" }, { status: "pending" }, { status: "delivered", latencyMs: 10_000 }],
    });
    // Outside 24 hours, inside 48.
    await seedSubmission(db, org, { createdAt: ago(30 * HOUR), recipients: [{ status: "delivered", latencyMs: 50_000 }, { status: "bounced" }] });
    // Outside every window asked for.
    await seedSubmission(db, org, { createdAt: ago(100 * HOUR), recipients: [{ status: "bounced" }] });
    await seedComplaint(db, org, { createdAt: ago(1 * HOUR) });
    await seedComplaint(db, org, { createdAt: ago(30 * HOUR) });
    // Another organization's traffic never counts.
    await seedSubmission(db, other.organizationId, { createdAt: ago(HOUR), recipients: [{ status: "bounced" }, { status: "delivered", latencyMs: 1 }] });
    await seedComplaint(db, other.organizationId, { createdAt: ago(HOUR) });

    const day = await tenant.request("GET", "/v1/metrics/delivery?hours=24");
    expect(day.status).toBe(200);
    expect(day.body).toMatchObject({
      hours: 24,
      counts: { submitted: 8, delivered: 4, deferred: 1, bounced: 1, failed: 1, complaints: 1 },
      bounceRate: 1 / 8,
      deferralRate: 1 / 8,
      complaintRate: 1 / 4,
      // percentile_cont over 1000, 2000, 3000, 10000 ms: p50 between 2000 and 3000, p90 at 2.7 of 3 steps, p99 at 2.97.
      latency: { p50Ms: 2_500, p90Ms: 7_900, p99Ms: 9_790 },
    });

    const twoDays = await tenant.request("GET", "/v1/metrics/delivery?hours=48");
    expect(twoDays.body).toMatchObject({
      hours: 48,
      counts: { submitted: 10, delivered: 5, deferred: 1, bounced: 2, failed: 1, complaints: 2 },
      bounceRate: 2 / 10,
      deferralRate: 1 / 10,
      complaintRate: 2 / 5,
      latency: { p50Ms: 3_000, p90Ms: 34_000, p99Ms: 48_400 },
    });
    expect(Date.parse(twoDays.body.since)).toBeLessThanOrEqual(Date.now() - 48 * HOUR);

    const otherView = await other.request("GET", "/v1/metrics/delivery");
    expect(otherView.body).toMatchObject({
      counts: { submitted: 2, delivered: 1, deferred: 0, bounced: 1, failed: 0, complaints: 1 },
      latency: { p50Ms: 1, p90Ms: 1, p99Ms: 1 },
    });
  });

  test("answers 0 rates when their denominator is 0: complaints without deliveries", async () => {
    const tenant = await app.createTenant();
    await seedSubmission(app.db, tenant.organizationId, { recipients: [{ status: "queued" }, { status: "bounced" }] });
    await seedComplaint(app.db, tenant.organizationId);
    const res = await tenant.request("GET", "/v1/metrics/delivery?hours=1");
    expect(res.body).toMatchObject({
      hours: 1,
      counts: { submitted: 2, delivered: 0, bounced: 1, complaints: 1 },
      bounceRate: 0.5,
      complaintRate: 0,
      latency: { p50Ms: null, p90Ms: null, p99Ms: null },
    });
  });

  test.each(["0", "721", "-1", "1.5", "abc", ""])("answers 400 for hours=%s", async (hours) => {
    const tenant = await app.createTenant();
    const res = await tenant.request("GET", `/v1/metrics/delivery?hours=${hours}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_request", message: expect.any(String) });
  });

  test("accepts the bounds of hours, 1 and 720", async () => {
    const tenant = await app.createTenant();
    expect((await tenant.request("GET", "/v1/metrics/delivery?hours=1")).body.hours).toBe(1);
    expect((await tenant.request("GET", "/v1/metrics/delivery?hours=720")).body.hours).toBe(720);
  });

  test("answers the same metrics over gRPC", async () => {
    const tenant = await app.createTenant();
    await seedSubmission(app.db, tenant.organizationId, { recipients: [{ status: "delivered", latencyMs: 42 }] });
    const res = await tenant.grpc(DeliveryService).getDeliveryMetrics({ hours: 2 });
    expect(res.hours).toBe(2);
    expect(res.counts).toMatchObject({ submitted: 1, delivered: 1 });
    expect(res.latency).toMatchObject({ p50Ms: 42, p90Ms: 42, p99Ms: 42 });
  });
});

describe("GET /v1/suppressions", () => {
  test("lists the organization's suppressions newest first, page by page, each exactly once", async () => {
    const tenant = await app.createTenant();
    const base = Date.now() - HOUR;
    const emails: string[] = [];
    for (let i = 0; i < 7; i++) {
      const email = `${uniqueName(`s${i}`)}@example.com`;
      emails.push(email);
      // Two pairs share a timestamp: the id orders them.
      await seedSuppression(app.db, tenant.organizationId, {
        email,
        reason: i % 2 ? "hard_bounce" : "complaint",
        detail: i === 0 ? null : `detail ${i}`,
        createdAt: new Date(base + Math.floor(i / 2) * 1000),
      });
    }
    const { items, pages } = await allPages(tenant, "/v1/suppressions", "suppressions", 3);
    expect(pages).toBe(3);
    expect(new Set(items.map((s) => s.email))).toEqual(new Set(emails));
    expect(items).toHaveLength(7);
    const times = items.map((s) => Date.parse(s.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(items.find((s) => s.email === emails[0])).toEqual({
      email: emails[0],
      reason: "complaint",
      detail: null,
      createdAt: new Date(base).toISOString(),
    });
    expect(items.find((s) => s.email === emails[1])).toMatchObject({ reason: "hard_bounce", detail: "detail 1" });

    const first = await tenant.request("GET", "/v1/suppressions");
    expect(first.body).toEqual({ suppressions: items, nextCursor: null });
  });

  test("answers an empty list with a null cursor, and 400 for a bad limit or a tampered cursor", async () => {
    const tenant = await app.createTenant();
    expect((await tenant.request("GET", "/v1/suppressions")).body).toEqual({ suppressions: [], nextCursor: null });
    expect((await tenant.request("GET", "/v1/suppressions?limit=0")).status).toBe(400);
    expect((await tenant.request("GET", "/v1/suppressions?limit=101")).status).toBe(400);
    const bad = await tenant.request("GET", "/v1/suppressions?cursor=abc.def");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("invalid_cursor");
  });
});

describe("DELETE /v1/suppressions", () => {
  test("removes an address with 204, matching it however it is written, after which it is gone", async () => {
    const tenant = await app.createTenant();
    const email = `${uniqueName("gone")}@example.com`;
    const kept = `${uniqueName("kept")}@example.com`;
    await seedSuppression(app.db, tenant.organizationId, { email, reason: "hard_bounce" });
    await seedSuppression(app.db, tenant.organizationId, { email: kept });
    const res = await tenant.request("DELETE", "/v1/suppressions", { body: { email: `  ${email.toUpperCase().replace("EXAMPLE.COM", "Example.COM")} ` } });
    expect(res.status).toBe(204);
    expect(res.body).toBe("");
    const list = await tenant.request("GET", "/v1/suppressions");
    expect(list.body.suppressions.map((s: { email: string }) => s.email)).toEqual([kept]);
  });

  test("answers 404 not_found for an address that is not suppressed, also when it was removed already", async () => {
    const tenant = await app.createTenant();
    const email = `${uniqueName("once")}@example.com`;
    await seedSuppression(app.db, tenant.organizationId, { email });
    const never = await tenant.request("DELETE", "/v1/suppressions", { body: { email: `${uniqueName("never")}@example.com` } });
    expect(never.status).toBe(404);
    expect(never.body).toEqual({ error: "not_found", message: "suppression not found" });
    expect((await tenant.request("DELETE", "/v1/suppressions", { body: { email } })).status).toBe(204);
    expect((await tenant.request("DELETE", "/v1/suppressions", { body: { email } })).status).toBe(404);
  });

  test("answers 400 for a body that is no address, a missing email, or unknown properties", async () => {
    const tenant = await app.createTenant();
    for (const body of [{ email: "not an address" }, { email: "a@b" }, {}, { email: "x@example.com", reason: "manual" }, undefined]) {
      const res = await tenant.request("DELETE", "/v1/suppressions", { body });
      expect([JSON.stringify(body), res.status, res.body.error]).toEqual([JSON.stringify(body), 400, "invalid_request"]);
    }
  });

  test("answers the same over Connect, with NotFound for an address that is not suppressed", async () => {
    const tenant = await app.createTenant();
    const email = `${uniqueName("rpc")}@example.com`;
    await seedSuppression(app.db, tenant.organizationId, { email });
    const client = tenant.connect(DeliveryService);
    await client.deleteSuppression({ email });
    const error = await client.deleteSuppression({ email }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.NotFound);
  });
});

describe("GET /v1/complaints", () => {
  test("lists the organization's complaints newest first, page by page", async () => {
    const tenant = await app.createTenant();
    const submission = await seedSubmission(app.db, tenant.organizationId, { recipients: [{ status: "delivered", latencyMs: 5 }] });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        await seedComplaint(app.db, tenant.organizationId, {
          email: `c${i}@example.com`,
          createdAt: ago((5 - i) * 1000),
          submissionId: i === 4 ? submission.id : null,
          userAgent: i === 4 ? "SomeGenerator/1.0" : null,
        }),
      );
    }
    const { items, pages } = await allPages(tenant, "/v1/complaints", "complaints", 2);
    expect(pages).toBe(3);
    expect(items.map((c) => c.id)).toEqual([...ids].reverse());
    expect(items[0]).toEqual({
      id: ids[4],
      email: "c4@example.com",
      feedbackType: "abuse",
      submissionId: submission.id,
      userAgent: "SomeGenerator/1.0",
      createdAt: expect.stringMatching(ISO_MS),
    });
    expect(items[1]).toMatchObject({ submissionId: null, userAgent: null });
  });
});

describe("scopes and tenants", () => {
  test.each([
    ["GET", "/v1/metrics/delivery", undefined, "delivery:read"],
    ["GET", "/v1/suppressions", undefined, "delivery:read"],
    ["GET", "/v1/complaints", undefined, "delivery:read"],
    ["DELETE", "/v1/suppressions", { email: "someone@example.com" }, "delivery:send"],
  ])("%s %s needs %s: 403 missing_scope without it", async (method, path, body, scope) => {
    const tenant = await app.createTenant();
    const others = ["mailbox:read", "mailbox:send", "mailbox:manage", "delivery:read", "delivery:send"].filter((s) => s !== scope);
    const without = await tenant.issueKey({ scopes: others });
    const refused = await tenant.request(method, path, { body, headers: { "x-api-key": without.key } });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe("missing_scope");
    const only = await tenant.issueKey({ scopes: [scope] });
    const allowed = await tenant.request(method, path, { body, headers: { "x-api-key": only.key } });
    // The DELETE reaches the handler: nothing is suppressed, so 404.
    expect(allowed.status).toBe(method === "DELETE" ? 404 : 200);
  });

  test("a key restricted to particular inboxes cannot remove suppressions (403 inbox_restricted) but can read them", async () => {
    const tenant = await app.createTenant({ managedLimit: 5 });
    const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("restricted"), displayName: "R" } });
    const email = `${uniqueName("kept")}@example.com`;
    await seedSuppression(app.db, tenant.organizationId, { email });
    const restricted = await tenant.issueKey({ scopes: ["delivery:send", "delivery:read"], inboxIds: [inbox.body.id] });
    const headers = { "x-api-key": restricted.key };
    const refused = await tenant.request("DELETE", "/v1/suppressions", { body: { email }, headers });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe("inbox_restricted");
    const list = await tenant.request("GET", "/v1/suppressions", { headers });
    expect(list.body.suppressions.map((s: { email: string }) => s.email)).toEqual([email]);
  });

  test("another organization never sees, counts or removes these rows, and cannot use their cursors", async () => {
    const owner = await app.createTenant();
    const stranger = await app.createTenant();
    const email = `${uniqueName("mine")}@example.com`;
    for (let i = 0; i < 3; i++) await seedSuppression(app.db, owner.organizationId, { email: i === 0 ? email : `${uniqueName("x")}@example.com` });
    await seedComplaint(app.db, owner.organizationId, { email });

    expect((await stranger.request("GET", "/v1/suppressions")).body).toEqual({ suppressions: [], nextCursor: null });
    expect((await stranger.request("GET", "/v1/complaints")).body).toEqual({ complaints: [], nextCursor: null });
    expect((await stranger.request("GET", "/v1/metrics/delivery")).body.counts.complaints).toBe(0);
    const removal = await stranger.request("DELETE", "/v1/suppressions", { body: { email } });
    expect(removal.status).toBe(404);
    expect(await app.db.fork().count(Suppression, { organization: owner.organizationId, email })).toBe(1);

    for (const [path, field] of [
      ["/v1/suppressions", "suppressions"],
      ["/v1/complaints", "complaints"],
    ] as const) {
      const page = await owner.request("GET", `${path}?limit=1`);
      expect(page.body[field]).toHaveLength(1);
      if (page.body.nextCursor === null) continue;
      const foreign = await stranger.request("GET", `${path}?cursor=${encodeURIComponent(page.body.nextCursor)}`);
      expect(foreign.status).toBe(400);
      expect(foreign.body.error).toBe("invalid_cursor");
    }
    // A cursor of one list is no cursor of the other.
    const suppressions = await owner.request("GET", "/v1/suppressions?limit=1");
    const crossed = await owner.request("GET", `/v1/complaints?cursor=${encodeURIComponent(suppressions.body.nextCursor)}`);
    expect(crossed.status).toBe(400);
  });
});
