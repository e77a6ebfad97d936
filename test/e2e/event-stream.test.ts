// StreamEvents through the real service: mail arrives at an smtp role running as its own process (`mailbox serve
// --role smtp`), whose processing stores each message with its event in the event log and notifies; streams held by
// two API processes on the same database get the event over Server-Sent Events (and gRPC) with the webhook's id
// and exact payload, resume after Last-Event-ID from the log, and idle streams get keep-alive comments; a stream
// ends with the error a new call would get once its key is revoked, expires, loses its scope or its inbox, or its
// organization is suspended.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTransport } from "nodemailer";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { EventService } from "../../gen/mailbox/v1/event_service_pb.js";
import { revokeKey, updateKey } from "../../src/admin/api-keys.js";
import { updateOrganization } from "../../src/admin/organizations.js";
import { WebhookDelivery } from "../../src/db/entities/index.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { openSse, type SseStream } from "../support/sse-client.js";
import { serveSmtp, type SmtpProcess } from "../support/smtp-process.js";

let database: FileDatabase;
let app: TestApp;
/** A second API process on the same database. */
let other: TestApp;
let smtp: SmtpProcess;
let smtpDir: string;
const streams: SseStream[] = [];

beforeAll(async () => {
  // The smtp process's sweeper adopts pending raw mail of its whole database: this file's own.
  database = await createFileDatabase();
  const env = {
    DATABASE_URL: database.url,
    STREAM_MAX_PER_KEY: "2",
    STREAM_KEEPALIVE_S: "1",
    API_HEADERS_TIMEOUT_MS: "1000",
    API_REQUEST_TIMEOUT_MS: "1000",
  };
  [app, other] = await Promise.all([startTestApp(env), startTestApp(env)]);
  smtpDir = await mkdtemp(join(tmpdir(), "mailbox-stream-smtp-"));
  smtp = await serveSmtp(app, smtpDir);
});
afterAll(async () => {
  for (const s of streams) s.close();
  await smtp?.kill();
  await other?.stop();
  await app?.stop();
  await database?.drop();
  if (smtpDir) await rm(smtpDir, { recursive: true, force: true });
});

async function inboxOf(tenant: Tenant): Promise<{ id: string; address: string }> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("streamed"), displayName: "Streamed" } });
  expect(res.status).toBe(201);
  return res.body;
}

async function sendMail(to: string, subject: string): Promise<void> {
  const info = await createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, ignoreTLS: true }).sendMail({
    from: "Sender <sender@example.net>",
    to,
    subject,
    text: `${subject}\n`,
  });
  expect(info.response).toMatch(/^250 /);
}

async function open(on: TestApp, key: string, query: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<SseStream> {
  const stream = await openSse(`${on.baseUrl}/v1/events:stream?${new URLSearchParams(query)}`, { "x-api-key": key, ...headers });
  streams.push(stream);
  return stream;
}

interface EventPayload {
  id: string;
  type: string;
  createdAt: string;
  data: { messageId: string; inboxId: string; threadId: string; senderAuthenticated?: boolean };
}

/** The next event of the stream, checked as the webhook sends it: the id: line is the payload's id. */
async function nextEvent(stream: SseStream): Promise<{ frame: { id?: string; data?: string }; event: EventPayload }> {
  const frame = await stream.nextEvent(30_000);
  const event = JSON.parse(frame.data!) as EventPayload;
  expect(frame.id).toBe(event.id);
  return { frame, event };
}

describe("StreamEvents", () => {
  test("streams mail stored by a separate smtp process to streams of two API processes, with the webhook's event id and exact payload, and resumes after Last-Event-ID", async () => {
    const tenant = await app.createTenant();
    const hook = await tenant.request("POST", "/v1/webhooks", {
      body: { url: `https://hooks.example.com/${uniqueName("h")}`, events: ["message.received"] },
      headers: { "idempotency-key": uniqueName("hook") },
    });
    expect(hook.status).toBe(201);
    const [a, b] = [await inboxOf(tenant), await inboxOf(tenant)];

    const all = await open(app, tenant.key);
    expect(all.status).toBe(200);
    expect(all.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const onlyB = await open(other, tenant.key, { inboxId: b.id });
    expect(onlyB.status).toBe(200);

    await sendMail(a.address, "first, to a");
    const first = await nextEvent(all);
    expect(first.event).toMatchObject({ type: "message.received", data: { inboxId: a.id } });
    await sendMail(b.address, "second, to b");
    const second = await nextEvent(all);
    expect(second.event).toMatchObject({ type: "message.received", data: { inboxId: b.id } });
    // The other process's stream of inbox b gets b's event only, the same event.
    expect((await nextEvent(onlyB)).frame).toEqual(second.frame);

    // The webhook's delivery of each event carries the same id and, byte for byte, the same payload but for what the
    // stream adds: whether the sender authenticated (not here: example.net publishes no DMARC record).
    for (const { event } of [first, second]) {
      const delivery = await app.db.fork().findOneOrFail(WebhookDelivery, { eventId: event.id });
      const { senderAuthenticated, ...webhookData } = event.data;
      expect(senderAuthenticated).toBe(false);
      expect(delivery.payload).toBe(JSON.stringify({ ...event, data: webhookData }));
    }

    // Resumed on the other process after the first event: the second, then what came since.
    all.close();
    await sendMail(a.address, "third, to a");
    const resumed = await open(other, tenant.key, {}, { "last-event-id": first.event.id });
    expect((await nextEvent(resumed)).frame).toEqual(second.frame);
    const third = await nextEvent(resumed);
    expect(third.event).toMatchObject({ data: { inboxId: a.id } });

    // Idle, the stream says it is alive with comments.
    const idle = await eventually(async () => {
      const frame = await resumed.next(30_000);
      return frame?.comments.includes("keep-alive") ? frame : undefined;
    });
    expect(idle.data).toBeUndefined();
  });

  test("answers 410 event_expired for a Last-Event-ID the log no longer keeps, and 400 for one that is no event id", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const stream = await open(app, tenant.key, { inboxId: inbox.id });
    await sendMail(inbox.address, "soon pruned");
    const { event } = await nextEvent(stream);
    stream.close();
    // As the worker's pruning does after EVENT_RETENTION.
    await app.db.sql.query(`delete from events where id = $1`, [event.id]);
    const expired = await open(app, tenant.key, {}, { "last-event-id": event.id });
    expect([expired.status, expired.error?.error]).toEqual([410, "event_expired"]);
    const malformed = await open(app, tenant.key, {}, { "last-event-id": "evt_1" });
    expect([malformed.status, malformed.error?.error]).toEqual([400, "invalid_request"]);
  });

  test("gives an inbox-restricted key only its inboxes' events, and 404 for another inbox or another tenant's", async () => {
    const tenant = await app.createTenant();
    const [mine, notMine] = [await inboxOf(tenant), await inboxOf(tenant)];
    const restricted = await tenant.issueKey({ scopes: ["mailbox:read"], inboxIds: [mine.id] });
    const stranger = await app.createTenant();

    const refused = await open(app, restricted.key, { inboxId: notMine.id });
    expect([refused.status, refused.error?.error]).toEqual([404, "not_found"]);
    const foreign = await open(app, stranger.key, { inboxId: mine.id });
    expect([foreign.status, foreign.error?.error]).toEqual([404, "not_found"]);
    const strangers = await open(app, stranger.key);

    const stream = await open(app, restricted.key);
    await sendMail(notMine.address, "not for the restricted key");
    await sendMail(mine.address, "for the restricted key");
    expect((await nextEvent(stream)).event.data.inboxId).toBe(mine.id);
    // Another organization's stream gets none of it: only keep-alives while the events went out.
    for (let i = 0; i < 2; i++) expect((await strangers.next(30_000))?.data).toBeUndefined();
  });

  /** The error event a stream ends with (keep-alives and events before it skipped), then its end. */
  async function endedWith(stream: SseStream): Promise<{ error: string; message: string }> {
    for (let frames = 0; frames < 30; frames++) {
      const frame = await stream.next(15_000);
      if (!frame) throw new Error("the stream ended without an error event");
      if (frame.event !== "error") continue;
      expect(await stream.next(15_000)).toBeUndefined();
      return JSON.parse(frame.data!) as { error: string; message: string };
    }
    throw new Error("the stream went on");
  }

  test("a stream ends with the error a new call would get when its key is revoked, expires, loses the scope or the inbox, or its organization is suspended", async () => {
    const tenant = await app.createTenant();
    const [inbox, elsewhere] = [await inboxOf(tenant), await inboxOf(tenant)];
    const keys = {
      revoked: await tenant.issueKey({ scopes: ["mailbox:read"] }),
      expiring: await tenant.issueKey({ scopes: ["mailbox:read"], expiresAt: new Date(Date.now() + 3_000) }),
      descoped: await tenant.issueKey({ scopes: ["mailbox:read"] }),
      narrowed: await tenant.issueKey({ scopes: ["mailbox:read"] }),
    };
    const streams = {
      revoked: await open(app, keys.revoked.key),
      expiring: await open(other, keys.expiring.key),
      descoped: await open(app, keys.descoped.key),
      narrowed: await open(app, keys.narrowed.key, { inboxId: inbox.id }),
    };
    for (const stream of Object.values(streams)) expect(stream.status).toBe(200);
    await revokeKey(app.db.fork(), keys.revoked.id);
    await updateKey(app.db.fork(), keys.descoped.id, { scopes: ["mailbox:manage"] });
    await updateKey(app.db.fork(), keys.narrowed.id, { inboxIds: [elsewhere.id] });
    expect(await endedWith(streams.revoked)).toMatchObject({ error: "unauthenticated" });
    expect(await endedWith(streams.expiring)).toMatchObject({ error: "unauthenticated" });
    expect(await endedWith(streams.descoped)).toMatchObject({ error: "missing_scope" });
    expect(await endedWith(streams.narrowed)).toMatchObject({ error: "not_found" });

    // Suspending the organization ends the streams of every key of it.
    const suspended = await app.createTenant();
    const stream = await open(app, suspended.key);
    await updateOrganization(app.db.fork(), suspended.organizationId, { status: "suspended" });
    expect(await endedWith(stream)).toMatchObject({ error: "organization_inactive" });
  });

  test("a stream of all the key's inboxes follows the key's inbox restriction as it changes", async () => {
    const tenant = await app.createTenant();
    const [kept, dropped] = [await inboxOf(tenant), await inboxOf(tenant)];
    const key = await tenant.issueKey({ scopes: ["mailbox:read"] });
    const stream = await open(app, key.key);
    await updateKey(app.db.fork(), key.id, { inboxIds: [kept.id] });
    // Past a keep-alive, the stream has read the key again.
    for (let i = 0; i < 2; i++) expect((await stream.next(30_000))?.data).toBeUndefined();
    await sendMail(dropped.address, "no longer the key's");
    await sendMail(kept.address, "still the key's");
    expect((await nextEvent(stream)).event.data.inboxId).toBe(kept.id);
  });

  test("holds at most STREAM_MAX_PER_KEY streams per key and process: one more is 429 too_many_streams with Retry-After", async () => {
    const tenant = await app.createTenant();
    const held = [await open(app, tenant.key), await open(app, tenant.key)];
    expect(held.map((s) => s.status)).toEqual([200, 200]);
    const refused = await open(app, tenant.key);
    expect([refused.status, refused.error?.error]).toEqual([429, "too_many_streams"]);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // A stream the client leaves gives its hold back.
    held[0]!.close();
    await eventually(async () => {
      const again = await open(app, tenant.key);
      if (again.status !== 200) return undefined;
      again.close();
      return true;
    });
  });

  test("streams over gRPC too: a first message without an event says the stream is open, then the events", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const abort = new AbortController();
    const messages = tenant.grpc(EventService).streamEvents({ inboxId: inbox.id }, { signal: abort.signal })[Symbol.asyncIterator]();
    try {
      const opened = await messages.next();
      expect(opened.done).toBe(false);
      expect(opened.value.event).toBeUndefined();
      await sendMail(inbox.address, "over gRPC");
      let next = await messages.next();
      while (!next.done && next.value.event === undefined) next = await messages.next();
      expect(next.value.event).toMatchObject({ type: "message.received", data: { inboxId: inbox.id } });
      expect(next.value.event.id).toMatch(/^evt_[a-f0-9]{24}$/);
    } finally {
      abort.abort();
    }
  });
});
