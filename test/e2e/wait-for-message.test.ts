// WaitForMessage through the real service: mail arrives by SMTP, the smtp role's processing thread stores it with
// what extraction read out of it, and a wait held by an API process (this one, or another one on the same database)
// answers it, woken by the event log's notification. Filters, the time limit, the per-key bound and the edge's
// request timeout, on the JSON face and over gRPC.
import { createTransport } from "nodemailer";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { InboxService } from "../../gen/mailbox/v1/inbox_service_pb.js";
import { Message } from "../../src/db/entities/index.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { storeInbound } from "../support/mail-fixtures.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

let app: TestApp;
/** A second API process on the same database, holding waits for mail the first one's smtp role stores. */
let other: TestApp;
let smtp: SmtpRole;

beforeAll(async () => {
  // A request timeout shorter than a wait: the edge must not cut a wait off.
  const edge = { API_HEADERS_TIMEOUT_MS: "1000", API_REQUEST_TIMEOUT_MS: "1000", WAIT_MAX_PER_KEY: "1" };
  [app, other] = await Promise.all([startTestApp(edge), startTestApp(edge)]);
  smtp = await app.startSmtp();
});
afterAll(async () => {
  await other?.stop();
  await app?.stop();
});

async function inboxOf(tenant: Tenant): Promise<{ id: string; address: string }> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("waiter"), displayName: "Waiter" } });
  expect(res.status).toBe(201);
  return res.body;
}

async function sendMail(to: string, mail: { from?: string; subject: string; text?: string; html?: string }): Promise<void> {
  const info = await createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, ignoreTLS: true }).sendMail({
    from: mail.from ?? "Sign-in <no-reply@accounts.example.com>",
    to,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
  });
  expect(info.response).toMatch(/^250 /);
}

const waitPath = (inboxId: string, query: Record<string, string> = {}) => `/v1/inboxes/${inboxId}/messages:wait?${new URLSearchParams(query)}`;

/**
 * Starts a wait and resolves (with its answer to come) once the key holds it, so mail sent now wakes it: with
 * WAIT_MAX_PER_KEY 1 a probe is then refused. A probe that took the key's hold first makes the wait itself refused;
 * the wait is then started again.
 */
async function heldWait<T>(tenant: Tenant, on: TestApp, inboxId: string, start: () => Promise<T>): Promise<{ answer: Promise<T> }> {
  for (let attempt = 1; ; attempt++) {
    let settled: { value?: T; error?: unknown } | undefined;
    const answer = start();
    answer.then(
      (value) => (settled = { value }),
      (error: unknown) => (settled = { error }),
    );
    let checks = 0;
    const outcome = await eventually(async () => {
      if (settled) return "lost" as const;
      // The wait reads what it must (its inbox, its after) before it takes the hold: the first probe comes a check
      // later, so it does not take the hold first every time.
      if (checks++ === 0) return undefined;
      const res = await fetch(on.baseUrl + waitPath(inboxId, { timeoutSeconds: "1" }), { headers: { "x-api-key": tenant.key } });
      const body = (await res.json()) as { error?: string };
      return res.status === 429 && body.error === "too_many_waits" ? ("held" as const) : undefined;
    });
    if (outcome === "held") return { answer };
    if (attempt === 10) throw new Error(`the wait never held: ${String(settled?.error ?? JSON.stringify(settled?.value))}`);
  }
}

/** The wait of a JSON request: a probe that took the hold first makes it 429 before it waited. */
const jsonWait = (tenant: Tenant, on: TestApp, path: string) => () =>
  fetch(on.baseUrl + path, { headers: { "x-api-key": tenant.key } }).then((res) => (res.status === 429 ? Promise.reject(new Error("429")) : res));

describe("WaitForMessage", () => {
  test("answers mail that arrives by SMTP while it waits, on another API process, with the code extracted", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const waiting = (await heldWait(tenant, other, inbox.id, jsonWait(tenant, other, waitPath(inbox.id, { subjectContains: "code" })))).answer;
    await sendMail(inbox.address, { subject: "Your verification code", text: "Hi,\n\nYour verification code is 482 913.\nIt expires in 10 minutes.\n" });

    const res = await waiting;
    expect(res.status).toBe(200);
    const body = (await res.json()) as { message: any; extracted: any };
    expect(body.message).toMatchObject({ inboxId: inbox.id, direction: "inbound", subject: "Your verification code" });
    expect(body.extracted.codes[0]).toMatchObject({ value: "482913", confidence: expect.any(Number) });
    expect(body.extracted.replyText).toContain("Your verification code is 482 913.");
    expect(body.message.extracted).toEqual(body.extracted);
    // Stored once, and every read of the message says the same.
    const thread = await tenant.request("GET", `/v1/threads/${body.message.threadId}`);
    expect(thread.body.messages[0].extracted).toEqual(body.extracted);
    const exported = await tenant.request("GET", `/v1/inboxes/${inbox.id}/export`);
    expect(exported.body.messages[0].extracted).toEqual(body.extracted);
  });

  test("answers mail stored while the listening connections were cut, once they listen again", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const waiting = (await heldWait(tenant, other, inbox.id, jsonWait(tenant, other, waitPath(inbox.id)))).answer;
    // Every process's LISTEN connection for events is cut, and cut again as soon as it listens, until the mail is
    // stored: its notification goes to nobody (as when PostgreSQL restarts or a proxy cuts the connection).
    const cut = () =>
      app.db.sql.query(`select pg_terminate_backend(pid) from pg_stat_activity where query = 'listen "mailbox_events"'`);
    let stored = false;
    const cutting = (async () => {
      while (!stored) await cut();
    })();
    try {
      await sendMail(inbox.address, { subject: "Sent while nobody listened", text: "hello" });
      await eventually(async () => ((await app.db.fork().count(Message, { inboxId: inbox.id })) > 0 ? true : undefined));
    } finally {
      stored = true;
      await cutting;
    }
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { message: { subject: string } }).message.subject).toBe("Sent while nobody listened");
  });

  test("holds no database connection while waiting: more waits than the pool has connections, and reads still answer", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    // The test app's pool has 10 connections; each key may hold one wait here (WAIT_MAX_PER_KEY 1).
    const keys = await Promise.all(Array.from({ length: 12 }, () => tenant.issueKey({ scopes: ["mailbox:read"] })));
    const settled: boolean[] = [];
    const waits: Promise<Response>[] = [];
    for (const [i, key] of keys.entries()) {
      const asKey = { ...tenant, key: key.key };
      const { answer } = await heldWait(asKey, app, inbox.id, jsonWait(asKey, app, waitPath(inbox.id, { timeoutSeconds: "25" })));
      const done = () => (settled[i] = true);
      answer.then(done, done);
      waits.push(answer);
    }
    // All twelve wait; reads through both pools (the ORM's, and plain SQL: a wait answered at once) answer meanwhile,
    // well before the waits' 25 seconds are up.
    const read = await tenant.request("GET", `/v1/inboxes/${inbox.id}`);
    expect(read.status).toBe(200);
    const ready = await inboxOf(tenant);
    const mail = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: ready.id });
    const reader = await tenant.issueKey({ scopes: ["mailbox:read"] });
    const quick = await fetch(app.baseUrl + waitPath(ready.id, { timeoutSeconds: "1" }), {
      headers: { "x-api-key": reader.key },
      signal: AbortSignal.timeout(20_000),
    });
    expect(((await quick.json()) as { message: { id: string } }).message.id).toBe(mail.messageId);
    expect(settled.filter(Boolean)).toEqual([]);
    await sendMail(inbox.address, { subject: "For everyone", text: "hello" });
    for (const res of await Promise.all(waits)) expect(res.status).toBe(200);
  });

  test("answers the oldest matching message at once, filtered by sender address or domain, subject and after", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const store = (from: string, subject: string, s: number) =>
      storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: inbox.id, from, subject, at: at(s) });
    const first = await store("alerts@mail.github.com", "Your GitHub launch code", 1);
    const second = await store("Someone@Example.org", "Re: lunch", 2);
    const third = await store("noreply@github.com", "Please verify your email", 3);
    const wait = async (query: Record<string, string>) => {
      const res = await tenant.request("GET", waitPath(inbox.id, { timeoutSeconds: "1", ...query }));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.message?.id ?? null;
    };
    expect(await wait({})).toBe(first.messageId);
    expect(await wait({ after: first.messageId })).toBe(second.messageId);
    expect(await wait({ from: "someone@example.ORG" })).toBe(second.messageId);
    expect(await wait({ from: "github.com" })).toBe(first.messageId);
    expect(await wait({ from: "github.com", after: first.messageId })).toBe(third.messageId);
    expect(await wait({ from: "hub.com" })).toBeNull();
    expect(await wait({ subjectContains: "VERIFY" })).toBe(third.messageId);
    expect(await wait({ after: third.messageId })).toBeNull();
    // A message stored before extraction existed has extracted null; the wait says so at the top too.
    const res = await tenant.request("GET", waitPath(inbox.id, { timeoutSeconds: "1" }));
    expect(res.body.extracted).toBeNull();
    expect(res.body.message.extracted).toBeNull();
  });

  test("answers {message: null, extracted: null} when nothing comes in time, not cut off by the request timeout, and 404 for an after the inbox has not", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    // Twice API_REQUEST_TIMEOUT_MS.
    const res = await tenant.request("GET", waitPath(inbox.id, { timeoutSeconds: "2" }));
    expect(res).toMatchObject({ status: 200, body: { message: null, extracted: null } });
    const elsewhere = await inboxOf(tenant);
    const mail = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: elsewhere.id });
    const after = await tenant.request("GET", waitPath(inbox.id, { after: mail.messageId, timeoutSeconds: "1" }));
    expect(after).toMatchObject({ status: 404, body: { error: "not_found" } });
  });

  test("refuses what the contract refuses: a timeout outside 1 to 25 seconds, a from that is not an address or domain", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const queries: Record<string, string>[] = [{ timeoutSeconds: "26" }, { timeoutSeconds: "0" }, { from: "two words" }, { after: "msg_1" }, { subjectContains: "" }];
    for (const query of queries) {
      const res = await tenant.request("GET", waitPath(inbox.id, query));
      expect([JSON.stringify(query), res.status, res.body.error]).toEqual([JSON.stringify(query), 400, "invalid_request"]);
    }
  });

  test("holds at most WAIT_MAX_PER_KEY waits per key and process: one more is 429 too_many_waits with Retry-After", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const first = (await heldWait(tenant, app, inbox.id, jsonWait(tenant, app, waitPath(inbox.id, { timeoutSeconds: "25" })))).answer;
    const refused = await tenant.request("GET", waitPath(inbox.id, { timeoutSeconds: "1" }));
    expect(refused).toMatchObject({ status: 429, body: { error: "too_many_waits" } });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Another key of the organization has its own.
    const second = await tenant.issueKey({ scopes: ["mailbox:read"] });
    const own = await tenant.request("GET", waitPath(inbox.id, { timeoutSeconds: "1" }), { headers: { "x-api-key": second.key } });
    expect(own).toMatchObject({ status: 200, body: { message: null } });
    // Mail ends the first wait, and its hold with it.
    await sendMail(inbox.address, { subject: "Wake up", text: "hello" });
    expect((await first).status).toBe(200);
    expect((await tenant.request("GET", waitPath(inbox.id, { timeoutSeconds: "1" }))).status).toBe(200);
  });

  test("waits over gRPC for the next message after a given one, woken by mail that arrives by SMTP", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    await sendMail(inbox.address, { subject: "First", text: "first" });
    const stored = await eventually(async () => (await app.db.fork().findOne(Message, { inboxId: inbox.id })) ?? undefined);
    const client = tenant.grpc(InboxService);
    const waiting = (await heldWait(tenant, app, inbox.id, () => client.waitForMessage({ inboxId: inbox.id, after: stored.id, timeoutSeconds: 25 }))).answer;
    await sendMail(inbox.address, {
      subject: "Confirm your address",
      html: `<p>Welcome!</p><p><a href="https://accounts.example.com/verify?token=abc123">Verify email</a></p>`,
    });
    const { message, extracted } = await waiting;
    expect(message?.subject).toBe("Confirm your address");
    expect(extracted?.links).toEqual([
      { $typeName: "mailbox.v1.ExtractedLink", url: "https://accounts.example.com/verify?token=abc123", text: "Verify email", domain: "accounts.example.com", kind: "verification" },
    ]);
  });
});
