// Two api, two smtp and two worker processes (`mailbox serve --role …`) against one PostgreSQL and one Temporal
// server that none of them started — the external mode of a deployment on many machines. They share nothing but
// those two: limits are counted once across the api processes, mail received by either smtp process is announced
// by webhook and wakes a wait held on either api process, and with one process of each role killed (kill -9) under
// load on both API ports and both SMTP listeners, every 250 is stored and every 202 delivered, at most one
// duplicate per kill, every copy with the Message-ID of its 202.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { startHttpsReceiver, type HttpsReceiver } from "../support/https-receiver.js";
import { serveRole, type RoleName, type RoleProcess } from "../support/role-process.js";
import { sendRaw } from "../support/smtp-client.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

let database: FileDatabase;
let app: TestApp;
let sink: SmtpSink;
let receiver: HttpsReceiver;
const roles: Record<RoleName, RoleProcess[]> = { api: [], smtp: [], worker: [] };

beforeAll(async () => {
  // The worker roles reconcile the whole database: this file's own keeps them off other files' submissions.
  [sink, receiver, database] = await Promise.all([startSmtpSink(), startHttpsReceiver(), createFileDatabase()]);
  // In this process only to make tenants and read the database; it runs no role of the cluster below.
  app = await startTestApp({ DATABASE_URL: database.url });
  const dir = await mkdtemp(join(tmpdir(), "mailbox-roles-"));
  const dkimKey = join(dir, "managed-dkim.pem");
  await writeFile(dkimKey, generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }));
  // What every machine of a deployment shares; each process has a DATA_DIR of its own.
  const shared = {
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_TASK_QUEUE: uniqueName("roles"),
    MANAGED_DOMAIN: app.config.managedDomain,
    CURSOR_SECRET: randomBytes(32).toString("hex"),
    DKIM_KEY_SECRET: randomBytes(32).toString("hex"),
    MANAGED_DKIM_KEY: dkimKey,
    SMTP_ROUTES: `sink.test=127.0.0.1:${sink.port}`,
    WEBHOOK_ALLOW_HOSTS: receiver.host,
    DELIVERY_RETRY_INITIAL: "1s",
    KEY_CACHE_MS: "0",
  };
  const started = await Promise.all(
    (["api", "api", "smtp", "smtp", "worker", "worker"] as const).map(async (role, i) =>
      serveRole(role, { ...shared, DATA_DIR: await mkdtemp(join(dir, `${role}-${i}-`)) }),
    ),
  );
  for (const p of started) roles[p.role].push(p);
}, 180_000);

afterAll(async () => {
  await Promise.all(Object.values(roles).flat().map((p) => p.kill("SIGKILL")));
  await app?.stop();
  await receiver?.close();
  await sink?.stop();
  await database?.drop();
});

/** A JSON request to one api process. */
async function call(api: RoleProcess, tenant: Tenant, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(api.api! + path, {
    method,
    headers: { "x-api-key": tenant.key, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text.startsWith("{") ? JSON.parse(text) : text };
}

const createInbox = async (api: RoleProcess, tenant: Tenant) =>
  (await call(api, tenant, "POST", "/v1/inboxes", { localPart: uniqueName("roles"), displayName: "Roles" })).body as { id: string; address: string };

const sendTo = (api: RoleProcess, tenant: Tenant, inboxId: string, to: string, subject: string) =>
  call(api, tenant, "POST", `/v1/inboxes/${inboxId}/messages`, { to: [{ email: to }], subject, text: "from a cluster" }, { "idempotency-key": uniqueName("k") });

const mail = (to: string, messageId: string, subject = messageId) =>
  `From: sender@example.org\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${messageId}>\r\n\r\nthrough one of two smtp processes\r\n`;

/** Starts of minutes are counter windows: a burst that straddles one would be counted in two. */
async function awayFromMinuteBoundary(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 100));
}

test("a key's request rate and an organization's send limit are counted once across both api processes", async () => {
  const limited = await app.createTenant({ restrictions: { requestsPerMinute: 10 } });
  await awayFromMinuteBoundary();
  const statuses: number[] = [];
  for (let i = 0; i < 20; i++) statuses.push((await call(roles.api[i % 2]!, limited, "GET", "/v1/inboxes")).status);
  expect(statuses.filter((s) => s === 200)).toHaveLength(10);
  expect(statuses.filter((s) => s === 429)).toHaveLength(10);

  const sender = await app.createTenant({ messagesPerDay: 3 });
  const inbox = await createInbox(roles.api[0]!, sender);
  const sends: number[] = [];
  for (let i = 0; i < 6; i++) sends.push((await sendTo(roles.api[i % 2]!, sender, inbox.id, `limit-${i}@sink.test`, `limit ${i}`)).status);
  expect(sends).toEqual([202, 202, 202, 429, 429, 429]);
});

test("mail through either smtp process reaches a webhook and a wait held on the other api process", async () => {
  const tenant = await app.createTenant();
  const inbox = await createInbox(roles.api[1]!, tenant);
  const endpoint = receiver.endpoint();
  const hook = await call(roles.api[0]!, tenant, "POST", "/v1/webhooks", { url: endpoint.url, events: ["message.received"] }, { "idempotency-key": uniqueName("hook") });
  expect(hook.status).toBe(201);

  // Held on api 0 while the mail arrives through smtp 1.
  const waiting = call(roles.api[0]!, tenant, "GET", `/v1/inboxes/${inbox.id}/messages:wait?timeoutSeconds=25`);
  const first = uniqueName("wait") + "@example.org";
  expect((await sendRaw(roles.smtp[1]!.smtpPort!, { from: "sender@example.org", to: [inbox.address], data: mail(inbox.address, first) })).message?.code).toBe(250);
  const waited = await waiting;
  expect(waited.status).toBe(200);
  expect(waited.body.message).toMatchObject({ inboxId: inbox.id, internetMessageId: `<${first}>` });

  const second = uniqueName("hook") + "@example.org";
  expect((await sendRaw(roles.smtp[0]!.smtpPort!, { from: "sender@example.org", to: [inbox.address], data: mail(inbox.address, second) })).message?.code).toBe(250);
  const deliveries = await endpoint.waitFor(2, 60_000);
  const announced = deliveries.map((d) => (JSON.parse(d.body) as { data: { inboxId: string } }).data.inboxId);
  expect(announced).toEqual([inbox.id, inbox.id]);
});

test("with one process of each role killed under load, every 250 is stored and every 202 delivered, one duplicate at most", async () => {
  const tenant = await app.createTenant({ messagesPerMinute: 10_000, messagesPerDay: 10_000, recipientsPerDay: 10_000 });
  const inboxes = await Promise.all([0, 1, 2].map((i) => createInbox(roles.api[i % 2]!, tenant)));
  const tag = randomBytes(4).toString("hex");
  const INBOUND = 40;
  const OUTBOUND = 30;
  const KILL_AFTER = 12;
  // A load balancer's view: both processes of each role until the kill, the survivors after it.
  const alive = { api: [...roles.api], smtp: [...roles.smtp] };
  const pick = <T>(list: T[], i: number) => list[i % list.length]!;
  let started = 0;
  let killed: Promise<void> | undefined;
  const maybeKill = () => {
    if (++started !== KILL_AFTER) return;
    const victims = [roles.api[1]!, roles.smtp[1]!, roles.worker[1]!];
    alive.api = [roles.api[0]!];
    alive.smtp = [roles.smtp[0]!];
    killed = Promise.all(victims.map((p) => p.kill("SIGKILL"))).then((ended) => expect(ended).toEqual(["SIGKILL", "SIGKILL", "SIGKILL"]));
  };

  const acceptedIn: string[] = [];
  const acceptedOut: { to: string; internetMessageId: string; submissionId: string }[] = [];
  const inbound = async (lane: number) => {
    for (let i = lane; i < INBOUND; i += 4) {
      maybeKill();
      const id = `roles-${tag}-${i}@example.org`;
      const to = pick(inboxes, i).address;
      const replies = await sendRaw(pick(alive.smtp, i).smtpPort!, { from: "sender@example.org", to: [to], data: mail(to, id) }).catch(() => null);
      if (replies?.message?.code === 250) acceptedIn.push(`<${id}>`);
    }
  };
  const outbound = async (lane: number) => {
    for (let i = lane; i < OUTBOUND; i += 3) {
      maybeKill();
      const to = `roles-${tag}-${i}@sink.test`;
      const res = await sendTo(pick(alive.api, i), tenant, pick(inboxes, i).id, to, `cluster ${i}`).catch(() => null);
      if (res?.status === 202) acceptedOut.push({ to, internetMessageId: res.body.message.internetMessageId, submissionId: res.body.submission.id });
    }
  };
  await Promise.all([...[0, 1, 2, 3].map(inbound), ...[0, 1, 2].map(outbound)]);
  await killed;
  // Most were acknowledged: the survivors took the load after the kill.
  expect(acceptedIn.length).toBeGreaterThan(INBOUND / 2);
  expect(acceptedOut.length).toBeGreaterThan(OUTBOUND / 2);

  // Stored: what the killed smtp process acknowledged is taken up by the survivor's sweeper.
  const copies = await eventually(async () => {
    const rows = await app.db.sql.query<{ id: string; n: number }>(
      "select internet_message_id as id, count(*)::int as n from messages where internet_message_id = any($1) group by 1",
      [acceptedIn],
    );
    return rows.length === acceptedIn.length ? rows : undefined;
  }, 120_000);
  expect(Math.max(...copies.map((r) => r.n))).toBeLessThanOrEqual(2);

  // Delivered: what the killed worker held is delivered by the other one.
  await eventually(async () => {
    const rows = await app.db.sql.query<{ status: string }>("select status from submissions where id = any($1)", [acceptedOut.map((s) => s.submissionId)]);
    return rows.length === acceptedOut.length && rows.every((r) => r.status === "delivered") ? true : undefined;
  }, 180_000);
  let duplicates = 0;
  for (const sent of acceptedOut) {
    const got = sink.copiesFor(sent.to);
    expect(got.length, sent.to).toBeGreaterThanOrEqual(1);
    duplicates += got.length - 1;
    for (const copy of got) expect(/^Message-ID: (.+)\r$/m.exec(copy.raw.toString("utf8"))?.[1]).toBe(sent.internetMessageId);
  }
  // One kill of each role: at most one duplicate each.
  expect(duplicates).toBeLessThanOrEqual(3);
}, 420_000);
