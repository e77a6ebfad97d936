// Reading mail: thread summaries, threads, export, message deletion and attachment downloads, over JSON and RPC.
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { ThreadService } from "../../gen/mailbox/v1/thread_service_pb.js";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.js";
import { storeInbound } from "../support/mail-fixtures.js";
import { NOT_EVALUATED } from "../support/sender-trust-app.js";
import { startTestApp, uniqueName, type JsonResponse, type TestApp, type Tenant } from "../support/harness.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.stop());

async function tenantWithInbox(): Promise<{ tenant: Tenant; inboxId: string }> {
  const tenant = await app.createTenant();
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("reader"), displayName: "Reader" } });
  return { tenant, inboxId: res.body.id };
}

const at = (seconds: number) => new Date(Date.UTC(2026, 10, 1, 12, 0, seconds));

describe("threads", () => {
  test("lists summaries newest activity first, without messages", async () => {
    const { tenant, inboxId } = await tenantWithInbox();
    const older = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, subject: "Older", at: at(1) });
    const newer = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, subject: "Newer", at: at(2) });
    const res = await tenant.request("GET", `/v1/inboxes/${inboxId}/threads`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      threads: [
        { id: newer.threadId, inboxId, subject: "Newer", participants: ["sender@example.net"], messageCount: 1, lastMessageAt: "2026-11-01T12:00:02.000Z" },
        { id: older.threadId, inboxId, subject: "Older", participants: ["sender@example.net"], messageCount: 1, lastMessageAt: "2026-11-01T12:00:01.000Z" },
      ],
      nextCursor: null,
    });
  });

  test("reads a thread with its messages newest first, exactly in the spec's inbound shape", async () => {
    const { tenant, inboxId } = await tenantWithInbox();
    const first = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, subject: "Q", at: at(1) });
    const second = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, threadId: first.threadId, subject: "Re: Q", html: "<p>hi</p>", at: at(5) });
    const res = await tenant.request("GET", `/v1/threads/${first.threadId}`);
    expect(res.status).toBe(200);
    expect(res.body.messageCount).toBe(2);
    expect(res.body.messages.map((m: { id: string }) => m.id)).toEqual([second.messageId, first.messageId]);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.messages[0]).toEqual({
      id: second.messageId,
      inboxId,
      threadId: first.threadId,
      direction: "inbound",
      internetMessageId: `<${second.messageId}@example.net>`,
      inReplyTo: null,
      references: [],
      from: { email: "sender@example.net", name: "Sender" },
      to: [{ email: "agent@agents.test" }],
      subject: "Re: Q",
      text: "Hi there",
      html: "<p>hi</p>",
      metadata: {},
      delivery: { submissionId: null, status: "received", failureCode: null },
      createdAt: "2026-11-01T12:00:05.000Z",
      updatedAt: expect.stringMatching(ISO_MS),
      attachments: [],
      inboundSecurity: {
        trust: "untrusted",
        smtp: { remoteIp: "192.0.2.7", helo: "mx.example.net", tls: { encrypted: true, protocol: "TLSv1.3", cipher: "TLS_AES_256_GCM_SHA384" } },
        // Stored as a message stored before sender authentication and sender rules existed.
        authentication: NOT_EVALUATED,
        attachments: "clean",
        replyToDiverges: false,
        senderRule: "none",
      },
      // Stored without going through inbound processing, which extracts.
      extracted: null,
      cc: [],
    });
    expect(res.body.messages[1]).not.toHaveProperty("html");
    expect(res.body.messages[1]).not.toHaveProperty("replyTo");
  });

  test("pages through a thread with no message lost or repeated, and answers the same over Connect", async () => {
    const { tenant, inboxId } = await tenantWithInbox();
    const { threadId } = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, at: at(0) });
    for (let i = 1; i < 5; i++) await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, threadId, at: at(i) });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { messages: { id: string }[]; nextCursor: string | null } } = await tenant.request(
        "GET",
        `/v1/threads/${threadId}?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      seen.push(...res.body.messages.map((m) => m.id));
      cursor = res.body.nextCursor;
    } while (cursor !== null);
    expect(new Set(seen).size).toBe(5);
    const viaRpc = await tenant.connect(ThreadService).getThread({ threadId, limit: 100 });
    expect(viaRpc.messages.map((m) => m.id)).toEqual(seen);
  });
});

describe("export", () => {
  test("exports the inbox with format version 1 and messages newest first", async () => {
    const { tenant, inboxId } = await tenantWithInbox();
    const a = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, at: at(1) });
    const b = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, at: at(2) });
    const res = await tenant.request("GET", `/v1/inboxes/${inboxId}/export?limit=1`);
    expect(res.status).toBe(200);
    expect(res.body.formatVersion).toBe(1);
    expect(res.body.inbox.id).toBe(inboxId);
    expect(res.body.messages.map((m: { id: string }) => m.id)).toEqual([b.messageId]);
    const next = await tenant.request("GET", `/v1/inboxes/${inboxId}/export?limit=1&cursor=${encodeURIComponent(res.body.nextCursor)}`);
    expect(next.body.messages.map((m: { id: string }) => m.id)).toEqual([a.messageId]);
    expect(next.body.nextCursor).toBeNull();
  });

  test("answers 413 page_too_large when a page's content exceeds the bound, and a smaller limit works", async () => {
    const small = await startTestApp({ MAX_PAGE_BYTES: "2048" });
    try {
      const tenant = await small.createTenant();
      const inboxId = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("big"), displayName: "B" } })).body.id;
      for (let i = 0; i < 2; i++) await storeInbound(small.db, { organizationId: tenant.organizationId, inboxId, text: "x".repeat(1500), at: at(i) });
      const res = await tenant.request("GET", `/v1/inboxes/${inboxId}/export?limit=2`);
      expect(res.status).toBe(413);
      expect(res.body.error).toBe("page_too_large");
      expect((await tenant.request("GET", `/v1/inboxes/${inboxId}/export?limit=1`)).status).toBe(200);
    } finally {
      await small.stop();
    }
  });

  test("answers 410 cursor_expired for a cursor of an inbox deleted since, 404 without one", async () => {
    const { tenant, inboxId } = await tenantWithInbox();
    for (let i = 0; i < 2; i++) await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, at: at(i) });
    const page = await tenant.request("GET", `/v1/inboxes/${inboxId}/export?limit=1`);
    expect((await tenant.request("DELETE", `/v1/inboxes/${inboxId}`)).status).toBe(204);
    const gone = await tenant.request("GET", `/v1/inboxes/${inboxId}/export?limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`);
    expect(gone.status).toBe(410);
    expect(gone.body.error).toBe("cursor_expired");
    expect((await tenant.request("GET", `/v1/inboxes/${inboxId}/export`)).status).toBe(404);
  });
});

describe("pages bounded in bytes", () => {
  // The app reads its database through a proxy that counts what PostgreSQL sends, so a test sees how much message
  // content a request loaded, whichever statements loaded it.
  const KiB = 1024;
  let proxy: CountingProxy;
  let bounded: TestApp;
  beforeAll(async () => {
    proxy = await startCountingProxy(inject("databaseUrl"));
    bounded = await startTestApp({ DATABASE_URL: proxy.url, MAX_PAGE_BYTES: String(1024 * KiB) });
  });
  afterAll(async () => {
    await bounded?.stop();
    await proxy?.stop();
  });

  /** The response, and the bytes PostgreSQL sent the app while it was made. */
  async function measured(tenant: Tenant, path: string): Promise<{ res: JsonResponse; loaded: number }> {
    const before = proxy.bytesFromServer;
    const res = await tenant.request("GET", path);
    return { res, loaded: proxy.bytesFromServer - before };
  }

  test("answers 413 for 101 messages that cannot fit a page of 100 without loading their bodies", async () => {
    const tenant = await bounded.createTenant();
    const inboxId = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("flood"), displayName: "F" } })).body.id;
    const first = await storeInbound(bounded.db, { organizationId: tenant.organizationId, inboxId, text: "a".repeat(32 * KiB), at: at(0) });
    for (let i = 1; i < 101; i++) {
      await storeInbound(bounded.db, { organizationId: tenant.organizationId, inboxId, threadId: first.threadId, text: "a".repeat(32 * KiB), at: at(i) });
    }
    for (const path of [`/v1/inboxes/${inboxId}/export?limit=100`, `/v1/threads/${first.threadId}?limit=100`]) {
      const { res, loaded } = await measured(tenant, path);
      expect(res.status, path).toBe(413);
      expect(res.body.error).toBe("page_too_large");
      // 100 bodies are 3.2 MB: not even two of them were read.
      expect(loaded, path).toBeLessThan(64 * KiB);
    }
  });

  test("loads only the bodies of the page it answers, not the one after, and pages on from there", async () => {
    const tenant = await bounded.createTenant();
    const inboxId = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("large"), displayName: "L" } })).body.id;
    const ids: string[] = [];
    let threadId: string | undefined;
    for (let i = 0; i < 4; i++) {
      const stored = await storeInbound(bounded.db, { organizationId: tenant.organizationId, inboxId, threadId, text: "abcd"[i]!.repeat(400 * KiB), at: at(i) });
      threadId = stored.threadId;
      ids.unshift(stored.messageId);
    }
    for (const base of [`/v1/inboxes/${inboxId}/export`, `/v1/threads/${threadId}`]) {
      // Three bodies (1.2 MB) exceed the bound: nothing is loaded.
      const refused = await measured(tenant, `${base}?limit=3`);
      expect(refused.res.status, base).toBe(413);
      expect(refused.loaded, base).toBeLessThan(64 * KiB);

      const first = await measured(tenant, `${base}?limit=2`);
      expect(first.res.status, base).toBe(200);
      expect(first.res.body.messages.map((m: { id: string }) => m.id)).toEqual(ids.slice(0, 2));
      expect(first.res.body.messages.map((m: { text: string }) => m.text)).toEqual(["d".repeat(400 * KiB), "c".repeat(400 * KiB)]);
      // The page's two bodies and a little more; a third body would be 400 KiB more.
      expect(first.loaded, base).toBeGreaterThan(800 * KiB);
      expect(first.loaded, base).toBeLessThan(800 * KiB + 64 * KiB);

      const next = await measured(tenant, `${base}?limit=2&cursor=${encodeURIComponent(first.res.body.nextCursor)}`);
      expect(next.res.status, base).toBe(200);
      expect(next.res.body.messages.map((m: { id: string }) => m.id)).toEqual(ids.slice(2));
      expect(next.res.body.nextCursor).toBeNull();
      expect(next.loaded, base).toBeLessThan(800 * KiB + 64 * KiB);
    }
  });
});

describe("deleting messages", () => {
  test("removes the message and keeps the thread summary true; the last one removes the thread", async () => {
    const { tenant, inboxId } = await tenantWithInbox();
    const first = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, at: at(1), attachments: [{ filename: "a.txt", content: "a", scanState: "clean" }] });
    const second = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId, threadId: first.threadId, at: at(9), from: "other@example.org" });
    const del = await tenant.request("DELETE", `/v1/messages/${second.messageId}`);
    expect(del.status).toBe(204);
    const thread = await tenant.request("GET", `/v1/threads/${first.threadId}`);
    expect(thread.body).toMatchObject({ messageCount: 1, lastMessageAt: "2026-11-01T12:00:01.000Z", participants: ["sender@example.net", "agent@agents.test"] });
    expect((await tenant.request("DELETE", `/v1/messages/${second.messageId}`)).status).toBe(404);
    expect((await tenant.request("DELETE", `/v1/messages/${first.messageId}`)).status).toBe(204);
    expect((await tenant.request("GET", `/v1/threads/${first.threadId}`)).status).toBe(404);
    expect((await tenant.request("GET", `/v1/messages/${first.messageId}/attachments/${first.attachmentIds[0]}`)).status).toBe(404);
  });
});

describe("attachment downloads", () => {
  test("serves a clean attachment's bytes with exactly the download-safe headers", async () => {
    const { tenant, inboxId } = await tenantWithInbox();
    const { messageId, attachmentIds } = await storeInbound(app.db, {
      organizationId: tenant.organizationId,
      inboxId,
      attachments: [{ filename: 'réport "final";.pdf', content: "%PDF-1.4 body", scanState: "clean" }],
    });
    const res = await fetch(`${app.baseUrl}/v1/messages/${messageId}/attachments/${attachmentIds[0]}`, { headers: { "x-api-key": tenant.key } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-length")).toBe("13");
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="r_port _final__.pdf"; filename*=UTF-8''r%C3%A9port%20%22final%22%3B.pdf`,
    );
    expect(Buffer.from(await res.arrayBuffer()).toString()).toBe("%PDF-1.4 body");
  });

  test.each([
    ["unscanned", 409, "attachment_scan_pending"],
    ["infected", 403, "attachment_blocked"],
    ["error", 403, "attachment_blocked"],
  ])("never serves an attachment whose scan state is %s", async (scanState, status, code) => {
    const { tenant, inboxId } = await tenantWithInbox();
    const { messageId, attachmentIds } = await storeInbound(app.db, {
      organizationId: tenant.organizationId,
      inboxId,
      attachments: [{ filename: "x.bin", content: "X5O!P%@AP", scanState }],
    });
    const res = await tenant.request("GET", `/v1/messages/${messageId}/attachments/${attachmentIds[0]}`);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: code, message: expect.any(String) });
  });
});

describe("isolation", () => {
  test("another tenant, or a key restricted to another inbox, gets 404 on every mail route and changes nothing", async () => {
    const { tenant: owner, inboxId } = await tenantWithInbox();
    const { messageId, threadId, attachmentIds } = await storeInbound(app.db, {
      organizationId: owner.organizationId,
      inboxId,
      attachments: [{ filename: "a.txt", content: "a", scanState: "clean" }],
    });
    const intruder = await app.createTenant();
    const otherInbox = (await owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("other"), displayName: "O" } })).body.id;
    const restricted = await owner.issueKey({ scopes: ["*"], inboxIds: [otherInbox] });
    const routes: [string, string][] = [
      ["GET", `/v1/inboxes/${inboxId}/threads`],
      ["GET", `/v1/inboxes/${inboxId}/export`],
      ["GET", `/v1/threads/${threadId}`],
      ["GET", `/v1/messages/${messageId}/attachments/${attachmentIds[0]}`],
      ["DELETE", `/v1/messages/${messageId}`],
    ];
    for (const [method, path] of routes) {
      expect((await intruder.request(method, path)).status, `${method} ${path}`).toBe(404);
      expect((await owner.request(method, path, { headers: { "x-api-key": restricted.key } })).status, `restricted ${method} ${path}`).toBe(404);
    }
    const thread = await owner.request("GET", `/v1/threads/${threadId}`);
    expect(thread.body.messages.map((m: { id: string }) => m.id)).toEqual([messageId]);
  });
});
