// Health and metrics of every role: /healthz, /readyz and /metrics on the API port (no key, no rate, no body;
// /metrics only behind METRICS_TOKEN there) and on STATUS_PORT of any role, scraped after real traffic on every API face, an SMTP
// delivery, a webhook and a send delivered to a local sink; readiness follows PostgreSQL going away and coming back.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { InboxService } from "../../gen/mailbox/v1/inbox_service_pb.js";
import { startCountingProxy } from "../support/counting-proxy.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { startHttpsReceiver, type HttpsReceiver } from "../support/https-receiver.js";
import { sendRaw } from "../support/smtp-client.js";
import { serveRole, type RoleProcess } from "../support/role-process.js";
import { serveSmtp } from "../support/smtp-process.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

/** The sum of the samples of `name` whose labels include `labels` (0 when there is none). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** A role process's environment: the run's PostgreSQL and Temporal, a task queue and data directory of its own, a status port. */
async function roleEnv(): Promise<Record<string, string>> {
  return {
    DATABASE_URL: inject("databaseUrl"),
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_TASK_QUEUE: uniqueName("status"),
    DATA_DIR: await mkdtemp(join(tmpdir(), "mailbox-status-")),
    STATUS_PORT: "0",
  };
}

async function scrape(baseUrl: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${baseUrl}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The API port faces clients: /metrics is served there behind a token only. */
const API_METRICS_TOKEN = "api-metrics-token-0123456789";
const API_METRICS = { authorization: `Bearer ${API_METRICS_TOKEN}` };

describe("on the API port", () => {
  let receiver: HttpsReceiver;
  let sink: SmtpSink;
  let app: TestApp;
  let smtpPort: number;
  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    sink = await startSmtpSink();
    app = await startTestApp({ WEBHOOK_ALLOW_HOSTS: receiver.host, SMTP_ROUTES: `sink.test=127.0.0.1:${sink.port}`, METRICS_TOKEN: API_METRICS_TOKEN });
    await app.startWorker();
    smtpPort = (await app.startSmtp()).port;
  });
  afterAll(async () => {
    await app?.stop();
    await sink?.stop();
    await receiver?.close();
  });

  test("answers /healthz and /readyz without a key, and refuses other methods than GET and HEAD", async () => {
    const health = await fetch(`${app.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe("ok\n");
    const ready = await fetch(`${app.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, checks: { database: "ok", temporal: "ok" } });
    expect((await fetch(`${app.baseUrl}/metrics`, { method: "HEAD", headers: API_METRICS })).status).toBe(200);
    const post = await fetch(`${app.baseUrl}/readyz`, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  test("counts API calls by method, face and code on every face, and never the status paths", async () => {
    const tenant = await app.createTenant();
    expect((await tenant.request("GET", "/v1/inboxes")).status).toBe(200);
    await tenant.connect(InboxService).listInboxes({});
    await tenant.grpc(InboxService).listInboxes({});
    await tenant.grpcWeb(InboxService).listInboxes({});
    const mcp = await fetch(`${app.baseUrl}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": tenant.key },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_inboxes", arguments: {} } }),
    });
    expect(mcp.status).toBe(200);
    // Refused by the request gate, before the body: counted with the method it asked for.
    expect((await fetch(`${app.baseUrl}/v1/inboxes`)).status).toBe(401);
    expect((await tenant.request("GET", "/v1/inboxes/inb_000000000000000000000000")).status).toBe(404);

    const text = await scrape(app.baseUrl, API_METRICS);
    for (const face of ["json", "connect", "grpc", "grpc-web", "mcp"]) {
      const labels = { operation: "ListInboxes", face, code: "ok" };
      expect(sample(text, "mailbox_api_requests_total", labels), face).toBe(1);
      expect(sample(text, "mailbox_api_request_duration_seconds_count", labels), face).toBe(1);
      expect(sample(text, "mailbox_api_request_duration_seconds_bucket", { ...labels, le: "+Inf" }), face).toBe(1);
    }
    expect(sample(text, "mailbox_api_requests_total", { operation: "ListInboxes", face: "json", code: "unauthenticated" })).toBe(1);
    expect(sample(text, "mailbox_api_requests_total", { operation: "GetInbox", face: "json", code: "not_found" })).toBe(1);

    const calls = sample(text, "mailbox_api_requests_total");
    for (const path of ["/healthz", "/readyz", "/metrics"]) await fetch(app.baseUrl + path, { headers: API_METRICS });
    expect(sample(await scrape(app.baseUrl, API_METRICS), "mailbox_api_requests_total")).toBe(calls);
  });

  test("counts a stream when it ends, with the code it ended with: refused while its messages are read, or left by its client", async () => {
    const tenant = await app.createTenant();
    const labels = (code: string) => ({ operation: "StreamEvents", face: "json", code });
    const before = await scrape(app.baseUrl, API_METRICS);
    // Another organization's inbox (or none): the stream's refusal comes after the call returned its stream.
    const missing = await fetch(`${app.baseUrl}/v1/events:stream?inboxId=inb_000000000000000000000000`, { headers: { "x-api-key": tenant.key } });
    expect(missing.status).toBe(404);
    await missing.body?.cancel();
    const abort = new AbortController();
    const open = await fetch(`${app.baseUrl}/v1/events:stream`, { headers: { "x-api-key": tenant.key }, signal: abort.signal });
    expect(open.status).toBe(200);
    abort.abort();
    await eventually(async () => {
      const text = await scrape(app.baseUrl, API_METRICS);
      const grew = (code: string) => sample(text, "mailbox_api_requests_total", labels(code)) - sample(before, "mailbox_api_requests_total", labels(code));
      // A stream its client leaves ends as the server ends it on the request's signal: ok (or canceled), once.
      return grew("not_found") === 1 && grew("canceled") + grew("ok") === 1 ? true : undefined;
    });
  });

  test("counts SMTP sessions, refusals by reply, accepted bytes, webhook attempts and a delivered send with its latency, naming no tenant", async () => {
    const tenant = await app.createTenant();
    const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("metrics"), displayName: "Metrics" } })).body;
    const endpoint = receiver.endpoint();
    const hook = await tenant.request("POST", "/v1/webhooks", {
      body: { url: endpoint.url, events: ["message.received"] },
      headers: { "idempotency-key": uniqueName("metrics-hook") },
    });
    expect(hook.status).toBe(201);

    const data = "From: customer@example.org\r\nTo: " + inbox.address + "\r\nSubject: Metrics\r\n\r\nCounted.\r\n";
    const replies = await sendRaw(smtpPort, { from: "customer@example.org", to: [inbox.address, `nobody-${uniqueName("x")}@${app.config.managedDomain}`], data });
    expect(replies.rcpt.map((r) => r?.code)).toEqual([250, 550]);
    expect(replies.message?.code).toBe(250);
    await endpoint.waitFor(1, 20_000);

    const send = await tenant.request("POST", `/v1/inboxes/${inbox.id}/messages`, {
      body: { to: [{ email: `${uniqueName("alice")}@sink.test` }], subject: "Out", text: "Delivered." },
      headers: { "idempotency-key": uniqueName("metrics-send") },
    });
    expect(send.status).toBe(202);

    // The processing thread reports its webhook attempts with its load; the delivery is recorded after the sink's 250.
    const text = await eventually(async () => {
      const t = await scrape(app.baseUrl, API_METRICS);
      return sample(t, "mailbox_webhook_attempts_total", { outcome: "delivered" }) >= 1 &&
        sample(t, "mailbox_delivery_recipients_total", { outcome: "delivered" }) >= 1
        ? t
        : undefined;
    }, 30_000);
    expect(sample(text, "mailbox_smtp_sessions_total")).toBe(1);
    expect(sample(text, "mailbox_smtp_sessions_open")).toBe(0);
    expect(sample(text, "mailbox_smtp_messages_accepted_total")).toBe(1);
    expect(sample(text, "mailbox_smtp_accepted_bytes_total")).toBeGreaterThanOrEqual(data.length);
    expect(sample(text, "mailbox_smtp_message_size_bytes_count")).toBe(1);
    expect(sample(text, "mailbox_smtp_refusals_total", { command: "rcpt", code: "550", status: "5.1.1" })).toBe(1);
    expect(sample(text, "mailbox_webhook_attempts_total", { outcome: "delivered" })).toBe(1);
    expect(sample(text, "mailbox_delivery_recipients_total", { outcome: "delivered" })).toBe(1);
    expect(sample(text, "mailbox_delivery_latency_seconds_count")).toBe(1);
    expect(sample(text, "mailbox_api_requests_total", { operation: "SendMessage", face: "json", code: "ok" })).toBe(1);
    expect(text).toMatch(/^mailbox_inbound_backlog_messages \d+$/m);
    expect(text).toMatch(/^mailbox_inbound_pending_messages \d+$/m);
    expect(text).toMatch(/^mailbox_inbound_oldest_pending_seconds [\d.e+-]+$/m);
    for (const pool of ["sql", "orm"]) {
      const open = sample(text, "mailbox_db_pool_connections", { pool, state: "idle" }) + sample(text, "mailbox_db_pool_connections", { pool, state: "busy" });
      expect(open, pool).toBeGreaterThan(0);
    }
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    for (const secret of [tenant.organizationId, tenant.keyId, tenant.key, inbox.id, inbox.address, hook.body.id, receiver.host]) {
      expect(text).not.toContain(secret);
    }
  });
});

test("without METRICS_TOKEN `serve --role api` serves no /metrics on its API port, only on STATUS_PORT, and /healthz and /readyz on both", async () => {
  const api = await serveRole("api", await roleEnv());
  try {
    expect((await fetch(`${api.api}/metrics`)).status).toBe(404);
    expect((await fetch(`${api.api}/metrics`, { headers: API_METRICS })).status).toBe(404);
    for (const base of [api.api!, api.status!]) {
      expect(await (await fetch(`${base}/healthz`)).text()).toBe("ok\n");
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
    }
    expect(await scrape(api.status!)).toMatch(/^process_resident_memory_bytes \d+/m);
  } finally {
    await api.kill();
  }
});

test("/readyz answers 503 while PostgreSQL is unreachable and 200 once it is back", async () => {
  const proxy = await startCountingProxy(inject("databaseUrl"));
  const app = await startTestApp({ DATABASE_URL: proxy.url });
  try {
    expect((await fetch(`${app.baseUrl}/readyz`)).status).toBe(200);
    proxy.interrupt();
    try {
      const down = await fetch(`${app.baseUrl}/readyz`);
      expect(down.status).toBe(503);
      expect(await down.json()).toEqual({ ready: false, checks: { database: "failing", temporal: "ok" } });
      expect((await fetch(`${app.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      proxy.resume();
    }
    await eventually(async () => ((await fetch(`${app.baseUrl}/readyz`)).status === 200 ? true : undefined));
  } finally {
    await app.stop();
    await proxy.stop();
  }
});

describe("on STATUS_PORT of the roles without an API port", () => {
  const children: RoleProcess[] = [];
  // The roles' reconcilers and sweeper scan their whole database: these get one of their own.
  let database: FileDatabase;
  beforeAll(async () => {
    database = await createFileDatabase();
  });
  afterAll(async () => {
    await Promise.all(children.map((child) => child.kill("SIGTERM")));
    await database?.drop();
  });

  /** `mailbox serve --role worker` on this file's database and the run's Temporal; resolves with its status URL. */
  async function serveWorker(env: Record<string, string>): Promise<string> {
    const worker = await serveRole("worker", { ...(await roleEnv()), DATABASE_URL: database.url, ...env });
    children.push(worker);
    return worker.status!;
  }

  test("the worker role serves health and its metrics with the Temporal SDK's own, /metrics behind METRICS_TOKEN", async () => {
    const token = "metrics-token-0123456789";
    const status = await serveWorker({ METRICS_TOKEN: token });
    expect((await fetch(`${status}/healthz`)).status).toBe(200);
    const ready = await fetch(`${status}/readyz`);
    expect(ready.status).toBe(200);
    // A process of `serve` also says whether it drains.
    expect(await ready.json()).toEqual({ ready: true, checks: { database: "ok", temporal: "ok", drain: "ok" } });
    expect((await fetch(`${status}/v1/inboxes`)).status).toBe(404);
    const refused = await fetch(`${status}/metrics`);
    expect(refused.status).toBe(401);
    expect((await fetch(`${status}/metrics`, { headers: { authorization: "Bearer wrong-token-0123456789" } })).status).toBe(401);
    // The SDK's exporter counts the worker's pollers once they run.
    const text = await eventually(async () => {
      const t = await scrape(status, { authorization: `Bearer ${token}` });
      return sample(t, "temporal_num_pollers") > 0 ? t : undefined;
    });
    for (const pool of ["sql", "orm"]) expect(text).toMatch(new RegExp(`^mailbox_db_pool_connections\\{pool="${pool}",state="idle"\\} \\d+$`, "m"));
    expect(text).toMatch(/^# TYPE mailbox_delivery_recipients_total counter$/m);
  });

  test("the smtp role's readiness includes its listener, and its metrics count its sessions", async () => {
    const app = await startTestApp({ DATABASE_URL: database.url });
    try {
      const smtp = await serveSmtp(app, await mkdtemp(join(tmpdir(), "mailbox-status-")), { STATUS_PORT: "0" });
      children.push(smtp);
      const status = smtp.status!;
      const ready = await fetch(`${status}/readyz`);
      expect(await ready.json()).toEqual({ ready: true, checks: { database: "ok", temporal: "ok", drain: "ok", smtp: "ok" } });
      const replies = await sendRaw(smtp.port, { from: "a@example.org", to: [`nobody@${app.config.managedDomain}`], data: "x" });
      expect(replies.rcpt[0]?.code).toBe(550);
      const text = await scrape(status);
      expect(sample(text, "mailbox_smtp_sessions_total")).toBe(1);
      expect(sample(text, "mailbox_smtp_refusals_total", { command: "rcpt", code: "550" })).toBe(1);
      await smtp.kill();
    } finally {
      await app.stop();
    }
  });
});
