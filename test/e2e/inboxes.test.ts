// Inboxes and the tenant profile over the JSON face and typed RPC, against real PostgreSQL and Temporal.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { AccountService } from "../../gen/mailbox/v1/account_service_pb.js";
import { InboxService } from "../../gen/mailbox/v1/inbox_service_pb.js";
import { startTestApp, uniqueName, type TestApp } from "../support/harness.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.stop());

describe("GET /v1/me", () => {
  test("returns the full tenant access profile with nulls for absent restrictions and no secret", async () => {
    const tenant = await app.createTenant({ managedLimit: 3, messagesPerMinute: 7 });
    const res = await tenant.request("GET", "/v1/me");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      organization: {
        id: tenant.organizationId,
        status: "active",
        sendLimits: { messagesPerMinute: 7, messagesPerDay: app.config.defaults.messagesPerDay, recipientsPerDay: app.config.defaults.recipientsPerDay },
        holdFor: "none",
      },
      apiKey: {
        id: tenant.keyId,
        kind: "agent",
        scopes: ["*"],
        inboxIds: null,
        allowedIps: null,
        sendMode: "new_and_reply",
        allowedRecipientDomains: null,
        expiresAt: null,
        requestsPerMinute: app.config.defaults.requestsPerMinute,
        holdFor: null,
      },
      managedStarter: { limit: 3, used: 0, remaining: 3 },
      platformLimits: {
        recipientsPerMessage: app.config.platformLimits.recipientsPerMessage,
        messageContentBytes: app.config.platformLimits.messageContentBytes,
        inboxes: app.config.platformLimits.inboxes,
        domains: app.config.platformLimits.domains,
        webhookEndpoints: app.config.platformLimits.webhookEndpoints,
        uploadStorageBytes: 1024 ** 3,
      },
    });
    expect(JSON.stringify(res.body)).not.toContain(tenant.key.slice(4, 20));
  });

  test("shows the key's restrictions as arrays and its expiry with millisecond precision", async () => {
    const tenant = await app.createTenant({
      restrictions: { inboxIds: ["inb_aaaaaaaaaaaaaaaaaaaaaaaa"], allowedIps: ["127.0.0.1"], allowedRecipientDomains: ["example.com"], sendMode: "reply_only", expiresAt: new Date("2099-01-02T03:04:05Z") },
    });
    const { body } = await tenant.request("GET", "/v1/me");
    expect(body.apiKey).toMatchObject({
      inboxIds: ["inb_aaaaaaaaaaaaaaaaaaaaaaaa"],
      allowedIps: ["127.0.0.1"],
      allowedRecipientDomains: ["example.com"],
      sendMode: "reply_only",
      expiresAt: "2099-01-02T03:04:05.000Z",
    });
  });

  test("answers the same profile over Connect, gRPC and gRPC-Web", async () => {
    const tenant = await app.createTenant();
    const viaConnect = await tenant.connect(AccountService).getMe({});
    const viaGrpc = await tenant.grpc(AccountService).getMe({});
    const viaGrpcWeb = await tenant.grpcWeb(AccountService).getMe({});
    expect(viaConnect.organization?.id).toBe(tenant.organizationId);
    expect(viaGrpc).toEqual(viaConnect);
    expect(viaGrpcWeb).toEqual(viaConnect);
  });

  test("refuses a gRPC call with an unusable key with the unauthenticated code", async () => {
    const tenant = await app.createTenant();
    const err = await tenant
      .grpc(AccountService)
      .getMe({}, { headers: { "x-api-key": "mbx_0000000000000000_" + "A".repeat(43) } })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.Unauthenticated);
  });
});

describe("inboxes", () => {
  test("creates a managed inbox with a lower-cased address and counts it against the allowance", async () => {
    const tenant = await app.createTenant({ managedLimit: 5 });
    const localPart = uniqueName("Agent.One");
    const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart, displayName: "Agent One" } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^inb_[a-f0-9]{24}$/),
      localPart: localPart.toLowerCase(),
      domainId: null,
      domainKind: "managed",
      domain: "agents.test",
      address: `${localPart.toLowerCase()}@agents.test`,
      displayName: "Agent One",
      status: "active",
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: expect.stringMatching(ISO_MS),
    });
    const me = await tenant.request("GET", "/v1/me");
    expect(me.body.managedStarter).toEqual({ limit: 5, used: 1, remaining: 4 });
    const got = await tenant.request("GET", `/v1/inboxes/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  test("refuses an address that is taken in any organization with 409 inbox_address_unavailable", async () => {
    const a = await app.createTenant();
    const b = await app.createTenant();
    const localPart = uniqueName("shared");
    expect((await a.request("POST", "/v1/inboxes", { body: { localPart, displayName: "A" } })).status).toBe(201);
    const res = await b.request("POST", "/v1/inboxes", { body: { localPart: localPart.toUpperCase(), displayName: "B" } });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "inbox_address_unavailable", message: expect.any(String) });
    const reserved = await b.request("POST", "/v1/inboxes", { body: { localPart: "postmaster", displayName: "B" } });
    expect(reserved.body.error).toBe("inbox_address_unavailable");
  });

  test("refuses a managed inbox past the lifetime allowance, even after deleting one", async () => {
    const tenant = await app.createTenant({ managedLimit: 1 });
    const first = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("one"), displayName: "One" } });
    expect(first.status).toBe(201);
    expect((await tenant.request("DELETE", `/v1/inboxes/${first.body.id}`)).status).toBe(204);
    const second = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("two"), displayName: "Two" } });
    expect(second.status).toBe(403);
    expect(second.body.error).toBe("managed_allowance_exhausted");
  });

  test("enforces platformLimits.inboxes with 403 inbox_limit_reached", async () => {
    const limited = await startTestApp({ LIMIT_INBOXES: "2" });
    try {
      const tenant = await limited.createTenant();
      const make = () => tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("lim"), displayName: "L" } });
      expect((await make()).status).toBe(201);
      expect((await make()).status).toBe(201);
      const third = await make();
      expect(third.status).toBe(403);
      expect(third.body.error).toBe("inbox_limit_reached");
      expect((await tenant.request("GET", "/v1/me")).body.platformLimits.inboxes).toBe(2);
    } finally {
      await limited.stop();
    }
  });

  test("creates concurrently without overshooting the allowance", async () => {
    const tenant = await app.createTenant({ managedLimit: 3 });
    const results = await Promise.all(
      Array.from({ length: 8 }, () => tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("race"), displayName: "R" } })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    expect(results.filter((r) => r.status === 403)).toHaveLength(5);
    expect((await tenant.request("GET", "/v1/me")).body.managedStarter).toEqual({ limit: 3, used: 3, remaining: 0 });
  });

  test("refuses an inbox on a domain id the organization does not have", async () => {
    const tenant = await app.createTenant();
    const res = await tenant.request("POST", "/v1/inboxes", {
      body: { localPart: uniqueName("x"), displayName: "X", domainId: "7d0f6a4e-2f7c-4b7e-9a53-4c1f3f1f0a11" },
    });
    expect(res.status).toBe(404);
  });

  test.each([
    ["an unknown property", { localPart: "ok", displayName: "X", extra: 1 }],
    ["a missing localPart", { displayName: "X" }],
    ["a localPart with a space", { localPart: "a b", displayName: "X" }],
    ["a localPart with a double dot", { localPart: "a..b", displayName: "X" }],
    ["a 65-character localPart", { localPart: "a".repeat(65), displayName: "X" }],
    ["a displayName with a line break", { localPart: "ok", displayName: "X\r\nBcc: x@y" }],
    ["a non-UUID domainId", { localPart: "ok", displayName: "X", domainId: "nope" }],
    ["a number for localPart", { localPart: 5, displayName: "X" }],
    ["a JSON array body", [1, 2]],
  ])("answers 400 {error, message} for %s", async (_what, body) => {
    const tenant = await app.createTenant();
    const res = await tenant.request("POST", "/v1/inboxes", { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_request", message: expect.any(String) });
  });

  test("answers 400 invalid_json for malformed JSON, never 500", async () => {
    const tenant = await app.createTenant();
    const res = await tenant.request("POST", "/v1/inboxes", { body: '{"localPart": "x",' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_json");
  });

  test.each([
    ["/v1/inboxes/not-an-id", 400],
    ["/v1/inboxes/inb_aaaaaaaaaaaaaaaaaaaaaaaa", 404],
    ["/v1/inboxes?limit=0", 400],
    ["/v1/inboxes?limit=101", 400],
    ["/v1/inboxes?limit=abc", 400],
    ["/v1/inboxes?colour=blue", 400],
    ["/v1/inboxes?cursor=forged.cursor", 400],
    ["/v1/nothing-here", 404],
  ])("GET %s answers %i", async (path, status) => {
    const tenant = await app.createTenant();
    const res = await tenant.request("GET", path);
    expect(res.status).toBe(status);
    expect(typeof res.body.error).toBe("string");
    expect(typeof res.body.message).toBe("string");
  });

  test("answers 405 with Allow for a known path under another verb", async () => {
    const tenant = await app.createTenant();
    const res = await tenant.request("PUT", "/v1/inboxes");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toContain("GET");
  });

  test("works over typed RPC with the same validation", async () => {
    const tenant = await app.createTenant();
    const client = tenant.connect(InboxService);
    const { inbox } = await client.createInbox({ localPart: uniqueName("rpc"), displayName: "RPC" });
    expect(inbox?.id).toMatch(/^inb_/);
    const err = await client.getInbox({ inboxId: "bad" }).catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    const list = await tenant.grpc(InboxService).listInboxes({ limit: 10 });
    expect(list.inboxes.map((i) => i.id)).toEqual([inbox!.id]);
  });
});

describe("pagination", () => {
  test("lists newest first and loses or repeats nothing while inboxes are created between pages", async () => {
    const tenant = await app.createTenant({ managedLimit: 100 });
    const create = async () =>
      (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("p"), displayName: "P" } })).body.id as string;
    const before: string[] = [];
    for (let i = 0; i < 7; i++) before.push(await create());

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { body: { inboxes: { id: string }[]; nextCursor: string | null } } = await tenant.request(
        "GET",
        `/v1/inboxes?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      seen.push(...res.body.inboxes.map((i) => i.id));
      cursor = res.body.nextCursor;
      if (pages++ === 0) await create(); // newer than every page still to come
    } while (cursor !== null);

    expect(seen).toEqual([...before].reverse());
    expect(pages).toBe(3);
  });

  test("pages through inboxes created in the same millisecond by id, without repeats or skips", async () => {
    const tenant = await app.createTenant({ managedLimit: 100 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("t"), displayName: "T" } })).body.id);
    }
    // Four share one creation time, so a page boundary falls between equal times; the fifth is newer.
    await app.db.sql.query(`update inboxes set created_at = '2030-01-01T00:00:00.123Z' where id = any($1)`, [ids.slice(0, 4)]);
    await app.db.sql.query(`update inboxes set created_at = '2030-01-01T00:00:00.124Z' where id = $1`, [ids[4]]);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { inboxes: { id: string; createdAt: string }[]; nextCursor: string | null } } = await tenant.request(
        "GET",
        `/v1/inboxes?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      seen.push(...res.body.inboxes.map((i) => i.id));
      cursor = res.body.nextCursor;
    } while (cursor !== null);

    expect(seen).toEqual([ids[4], ...ids.slice(0, 4).sort().reverse()]);
  });

  test("pages an inbox-restricted key through its own inboxes only, deleted ones left out", async () => {
    const tenant = await app.createTenant({ managedLimit: 100 });
    const create = async () =>
      (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("k"), displayName: "K" } })).body.id as string;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await create());
    const [a, b, c, d] = ids;
    expect((await tenant.request("DELETE", `/v1/inboxes/${c}`)).status).toBe(204);
    const restricted = await tenant.issueKey({ scopes: ["*"], inboxIds: [a!, b!, c!, d!] });
    const headers = { "x-api-key": restricted.key };

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: { inboxes: { id: string }[]; nextCursor: string | null } } = await tenant.request(
        "GET",
        `/v1/inboxes?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        { headers },
      );
      expect(res.status).toBe(200);
      seen.push(...res.body.inboxes.map((i) => i.id));
      cursor = res.body.nextCursor;
    } while (cursor !== null);

    expect(seen).toEqual([d, b, a]);
    // The organization's own key sees every active inbox.
    const all = await tenant.request("GET", "/v1/inboxes?limit=100");
    expect(all.body.inboxes.map((i: { id: string }) => i.id)).toEqual(ids.filter((id) => id !== c).reverse());
  });

  test("refuses a cursor of another tenant or a tampered one with 400", async () => {
    const a = await app.createTenant();
    const b = await app.createTenant();
    for (let i = 0; i < 2; i++) await a.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("c"), displayName: "C" } });
    const page = await a.request("GET", "/v1/inboxes?limit=1");
    const cursor: string = page.body.nextCursor;
    expect(cursor).toEqual(expect.any(String));
    const foreign = await b.request("GET", `/v1/inboxes?limit=1&cursor=${encodeURIComponent(cursor)}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toBe("invalid_cursor");
    // A character in the middle: the last one of unpadded base64url may carry unused bits, so changing it can
    // leave the decoded bytes as they were.
    const at = Math.floor(cursor.length / 2);
    const tampered = cursor.slice(0, at) + (cursor[at] === "A" ? "B" : "A") + cursor.slice(at + 1);
    expect((await a.request("GET", `/v1/inboxes?limit=1&cursor=${encodeURIComponent(tampered)}`)).status).toBe(400);
  });
});

describe("the OpenAPI document", () => {
  test("is served at /openapi.json without a key, as OpenAPI 3.1.0 of version 0.1.0-private-beta", async () => {
    const res = await fetch(`${app.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; info: { version: string }; paths: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("0.1.0-private-beta");
    expect(Object.keys(doc.paths)).toContain("/v1/inboxes/{inboxId}");
  });
});
