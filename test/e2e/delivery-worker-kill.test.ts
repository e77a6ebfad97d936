// Two worker processes (`mailbox serve --role worker`) and one api process of a task queue of their own, under an
// open loop of sends; one worker is cut off from Temporal (its starts hang) and then killed (kill -9) while it holds
// claims and SMTP transactions whose replies the peer sits on. Everything the api accepted is delivered by the
// survivor within 30 s of the kill — not after the reconciler's minutes — at most one extra copy each, every copy
// with the Message-ID of its 202.
//
// The test's own organization and task queue keep it apart from the other test files that share the database.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { serveRole, type RoleProcess } from "../support/role-process.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";

/** The target, measured from outside: a killed worker's mail is delivered this soon after the kill. */
const DELIVERED_WITHIN_MS = 30_000;
const RATE_PER_S = 8;
const SENDS = 100;
/** Sends of the open loop before the partition, and before the kill. */
const PARTITION_AFTER = 24;
const KILL_AFTER = 40;

let app: TestApp;
let sink: SmtpSink;
let proxy: TcpProxy;
let dir: string;
const processes: RoleProcess[] = [];

beforeAll(async () => {
  sink = await startSmtpSink();
  // In this process only to make the tenant and read the database; it runs no role of the deployment below.
  app = await startTestApp();
  const [temporalHost, temporalPort] = inject("temporalAddress").split(":") as [string, string];
  proxy = await startTcpProxy(temporalHost, Number(temporalPort));
  dir = await mkdtemp(join(tmpdir(), "mailbox-worker-kill-"));
  const dkimKey = join(dir, "managed-dkim.pem");
  await writeFile(dkimKey, generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }));
  const shared = {
    DATABASE_URL: inject("databaseUrl"),
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_TASK_QUEUE: uniqueName("worker-kill"),
    MANAGED_DOMAIN: app.config.managedDomain,
    CURSOR_SECRET: randomBytes(32).toString("hex"),
    DKIM_KEY_SECRET: randomBytes(32).toString("hex"),
    MANAGED_DKIM_KEY: dkimKey,
    SMTP_ROUTES: `sink.test=127.0.0.1:${sink.port}`,
    DELIVERY_RETRY_INITIAL: "1s",
  };
  const started = await Promise.all([
    serveRole("api", { ...shared, DATA_DIR: await mkdtemp(join(dir, "api-")) }),
    serveRole("worker", { ...shared, DATA_DIR: await mkdtemp(join(dir, "survivor-")) }),
    // The one to be killed reaches Temporal through the proxy, so that it can be cut off first.
    serveRole("worker", { ...shared, DATA_DIR: await mkdtemp(join(dir, "victim-")), TEMPORAL_ADDRESS: proxy.address }),
  ]);
  processes.push(...started);
}, 180_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill("SIGKILL")));
  await proxy?.close();
  await app?.stop();
  await sink?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function send(api: RoleProcess, tenant: Tenant, inboxId: string, to: string) {
  const res = await fetch(`${api.api!}/v1/inboxes/${inboxId}/messages`, {
    method: "POST",
    headers: { "x-api-key": tenant.key, "content-type": "application/json", "idempotency-key": uniqueName("k") },
    body: JSON.stringify({ to: [{ email: to }], subject: "worker kill", text: "from a deployment losing a worker" }),
  });
  return { status: res.status, body: (await res.json()) as { submission: { id: string }; message: { internetMessageId: string } } };
}

test("after kill -9 of one of two workers under load, every accepted message is delivered within 30 s of the kill", async () => {
  const [api, , victim] = processes as [RoleProcess, RoleProcess, RoleProcess];
  const tenant = await app.createTenant({ messagesPerMinute: 10_000, messagesPerDay: 10_000, recipientsPerDay: 10_000 });
  const inbox = await fetch(`${api.api!}/v1/inboxes`, {
    method: "POST",
    headers: { "x-api-key": tenant.key, "content-type": "application/json" },
    body: JSON.stringify({ localPart: uniqueName("kill"), displayName: "Kill" }),
  }).then((r) => r.json() as Promise<{ id: string }>);
  const tag = randomBytes(4).toString("hex");

  const accepted: { to: string; submissionId: string; internetMessageId: string }[] = [];
  let killedAt = 0;
  const sends: Promise<void>[] = [];
  const began = performance.now();
  for (let i = 0; i < SENDS; i++) {
    const due = began + (i * 1000) / RATE_PER_S - performance.now();
    if (due > 0) await sleep(due);
    if (i === PARTITION_AFTER) {
      // Cut off from Temporal: whatever it claims from now on cannot start a workflow; and the peer sits on its
      // answers to the next transactions, so that it dies in the middle of some.
      proxy.freeze();
      sink.holdData(6, 120_000);
    }
    if (i === KILL_AFTER) {
      expect(await victim.kill("SIGKILL")).toBe("SIGKILL");
      killedAt = Date.now();
      // The survivor's transactions are answered from now on; the dead one's were taken already.
      sink.holdData(0, 0);
      sink.releaseData();
    }
    const to = `kill-${tag}-${i}@sink.test`;
    sends.push(
      send(api, tenant, inbox.id, to).then(
        (res) => {
          if (res.status === 202) accepted.push({ to, submissionId: res.body.submission.id, internetMessageId: res.body.message.internetMessageId });
        },
        () => undefined,
      ),
    );
  }
  await Promise.all(sends);
  expect(accepted.length).toBeGreaterThan(SENDS * 0.9);

  // Every accepted message delivered (bounded well past the target, so that a miss shows by how much).
  const ids = accepted.map((a) => a.submissionId);
  const rows = await eventually(async () => {
    const found = await app.db.sql.query<{ status: string; delivered_at: Date | null }>(
      `select r.status, r.delivered_at from submission_recipients r where r.submission_id = any($1::uuid[])`,
      [ids],
    );
    return found.length === ids.length && found.every((r) => r.status === "delivered") ? found : undefined;
  }, 240_000).catch(async () => {
    const states = await app.db.sql.query<{ status: string; n: number }>(
      "select status, count(*)::int as n from submissions where id = any($1::uuid[]) group by 1",
      [ids],
    );
    throw new Error(`not every accepted message was delivered: ${JSON.stringify(states)}`);
  });
  const lastDeliveredAfterKill = Math.max(...rows.map((r) => r.delivered_at!.getTime())) - killedAt;
  expect(lastDeliveredAfterKill, `the last one was delivered ${lastDeliveredAfterKill} ms after the kill`).toBeLessThanOrEqual(DELIVERED_WITHIN_MS);

  // At most one extra copy of what the dead worker sent and did not record; every copy with its 202's Message-ID.
  for (const sent of accepted) {
    const copies = sink.copiesFor(sent.to);
    expect(copies.length, sent.to).toBeGreaterThanOrEqual(1);
    expect(copies.length, sent.to).toBeLessThanOrEqual(2);
    for (const copy of copies) expect(/^Message-ID: (.+)\r$/m.exec(copy.raw.toString("utf8"))?.[1]).toBe(sent.internetMessageId);
  }
}, 420_000);
