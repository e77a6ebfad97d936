// SIGTERM drains each role of a real `mailbox serve --role …` process: it stops accepting, finishes what is in
// flight (an API request whose body is still arriving, an SMTP transaction in DATA, a delivery waiting on its
// peer's reply), hands back what cannot finish within SHUTDOWN_TIMEOUT_MS, and exits 0.
import { mkdtemp } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { WorkflowNotFoundError } from "@temporalio/client";
import { SUBMISSIONS_ANNOUNCED } from "../../src/outbound/delivery/queue.js";
import { deliveryWorkflowId } from "../../src/temporal/client.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { insertSubmission, submissionState } from "../support/outbound-fixtures.js";
import { serveRole, type RoleName, type RoleProcess } from "../support/role-process.js";
import { RawSmtpClient } from "../support/smtp-client.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

let database: FileDatabase;
let app: TestApp;
let sink: SmtpSink;
const processes: RoleProcess[] = [];

beforeAll(async () => {
  // Worker roles reconcile the whole database: this file's own keeps them off other files' submissions.
  [sink, database] = await Promise.all([startSmtpSink(), createFileDatabase()]);
  app = await startTestApp({ DATABASE_URL: database.url });
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill("SIGKILL")));
  await app?.stop();
  await sink?.stop();
  await database?.drop();
});

/** A role on this file's database and the run's Temporal, on its own task queue unless told otherwise. */
async function role(name: RoleName, env: Record<string, string> = {}): Promise<RoleProcess> {
  const started = await serveRole(name, {
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_TASK_QUEUE: uniqueName("drain"),
    MANAGED_DOMAIN: app.config.managedDomain,
    DATA_DIR: await mkdtemp(join(tmpdir(), "mailbox-drain-")),
    SMTP_ROUTES: `sink.test=127.0.0.1:${sink.port}`,
    DELIVERY_TIMEOUT_MS: "60000",
    // A cut attempt counts as a deferral: the next worker retries it a second later.
    DELIVERY_RETRY_INITIAL: "1s",
    ...env,
  });
  processes.push(started);
  return started;
}

/** Resolves once a connection to `port` is refused: the process has closed its listener. */
async function refusesConnections(port: number): Promise<true> {
  return eventually(
    () =>
      new Promise<true | undefined>((resolve) => {
        const socket = net.connect({ port, host: "127.0.0.1" });
        socket.once("connect", () => {
          socket.destroy();
          resolve(undefined);
        });
        socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code === "ECONNREFUSED" ? true : undefined));
      }),
    20_000,
  );
}

test("the api role finishes a request in flight after SIGTERM, refuses new connections, and exits 0", async () => {
  const tenant = await app.createTenant();
  const api = await role("api", { SHUTDOWN_TIMEOUT_MS: "30000" });
  const { port } = new URL(api.api!);
  const body = JSON.stringify({ localPart: uniqueName("drain"), displayName: "Drained" });

  // Expect: 100-continue makes the server say when it starts reading the body: from then on the request is in
  // flight, and the rest of the body is sent only after SIGTERM has closed the listener.
  const req = http.request({
    host: "127.0.0.1",
    port,
    method: "POST",
    path: "/v1/inboxes",
    headers: { "x-api-key": tenant.key, "content-type": "application/json", "content-length": Buffer.byteLength(body), expect: "100-continue" },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.once("response", (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (d: string) => (text += d));
      res.once("end", () => resolve({ status: res.statusCode!, body: text }));
    });
    req.once("error", reject);
  });
  await new Promise<void>((resolve) => req.once("continue", resolve));

  const exited = api.kill("SIGTERM");
  await refusesConnections(Number(port));
  req.end(body);

  const answer = await response;
  expect(answer.status, answer.body).toBe(201);
  expect(JSON.parse(answer.body)).toMatchObject({ displayName: "Drained" });
  expect(await exited, api.stderr()).toBe(0);
});

test("the smtp role tells idle sessions 421, lets a transaction in DATA finish with 250, then 421s it, and exits 0", async () => {
  const tenant = await app.createTenant();
  const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("drain"), displayName: "Drain" } })).body as { id: string; address: string };
  const smtp = await role("smtp", { SHUTDOWN_TIMEOUT_MS: "30000", STATUS_PORT: "0" });

  const { client: idle } = await RawSmtpClient.connect(smtp.smtpPort!);
  expect((await idle.command("EHLO idle.example"))?.code).toBe(250);
  const { client: busy } = await RawSmtpClient.connect(smtp.smtpPort!);
  expect((await busy.command("EHLO busy.example"))?.code).toBe(250);
  expect((await busy.command("MAIL FROM:<sender@example.org>"))?.code).toBe(250);
  expect((await busy.command(`RCPT TO:<${inbox.address}>`))?.code).toBe(250);
  expect((await busy.command("DATA"))?.code).toBe(354);
  busy.write("From: sender@example.org\r\nSubject: sent while draining\r\nMessage-ID: <drain-1@example.org>\r\n\r\nfirst half,\r\n");

  const exited = smtp.kill("SIGTERM");
  const told = await idle.reply();
  expect(told?.code).toBe(421);
  expect(told?.text).toMatch(/shutting down/);
  await idle.closed;
  await refusesConnections(smtp.smtpPort!);
  // Out of its load balancer's rotation while it drains.
  const ready = await fetch(`${smtp.status}/readyz`);
  expect(ready.status).toBe(503);
  expect(await ready.json()).toMatchObject({ ready: false, checks: { drain: "failing" } });

  busy.write("second half.\r\n.\r\n");
  expect((await busy.reply())?.code).toBe(250);
  expect((await busy.command("MAIL FROM:<sender@example.org>"))?.code).toBe(421);
  await busy.closed;
  expect(await exited, smtp.stderr()).toBe(0);

  // Committed before its 250: stored, or its raw row is there for any smtp process to store.
  const [{ stored, raw }] = await app.db.sql.query<{ stored: number; raw: number }>(
    "select (select count(*)::int from messages where inbox_id = $1) as stored, (select count(*)::int from inbound_raw_messages where $1 = any(inbox_ids)) as raw",
    [inbox.id],
  );
  expect(stored + raw).toBe(1);
});

/**
 * A delivery of one submission to the sink on `taskQueue`, announced as acceptance announces it, under way once its
 * peer has the whole message: its first attempt is the delivery queue's (DELIVERY_WORKFLOWS=deferred) or its
 * workflow's (all).
 */
async function deliveryUnderWay(taskQueue: string) {
  const tenant = await app.createTenant();
  const to = `${uniqueName("drain")}@sink.test`;
  const s = await insertSubmission(app.db, {
    organizationId: tenant.organizationId,
    from: { email: `${uniqueName("agent")}@${app.config.managedDomain}` },
    to: [{ email: to }],
    withMessage: true,
    taskQueue,
  });
  await app.db.sql.query("select pg_notify($1, $2)", [SUBMISSIONS_ANNOUNCED, `${taskQueue}\t${s.submissionId}`]);
  // The peer has the whole message; its reply is held.
  await eventually(async () => (sink.copiesFor(to).length === 1 ? true : undefined));
  return { ...s, to };
}

const delivered = (submissionId: string) =>
  eventually(async () => {
    const state = await submissionState(app.db, submissionId);
    return state.status === "delivered" ? state : undefined;
  });

/** The submission's delivery workflow's status, or null when it has none (delivered at the queue's first attempt). */
const workflowStatus = (submissionId: string) =>
  app.temporal.workflow
    .getHandle(deliveryWorkflowId(submissionId))
    .describe()
    .then(
      (w) => w.status.name as string,
      (e: unknown) => {
        if (e instanceof WorkflowNotFoundError) return null;
        throw e;
      },
    );

/** Whose first attempt is under way: the delivery queue's (DELIVERY_WORKFLOWS=deferred) or a workflow's (all). */
const ATTEMPTS = [
  ["its delivery queue's first attempt", "deferred"],
  ["a workflow's first attempt", "all"],
] as const;

test.each(ATTEMPTS)("the worker role finishes %s waiting on its peer after SIGTERM, and exits 0", async (_name, workflows) => {
  const taskQueue = uniqueName("drain-worker");
  const worker = await role("worker", { TEMPORAL_TASK_QUEUE: taskQueue, SHUTDOWN_TIMEOUT_MS: "60000", DELIVERY_WORKFLOWS: workflows });
  sink.holdData(1, 3_000);
  const s = await deliveryUnderWay(taskQueue);

  expect(await worker.kill("SIGTERM"), worker.stderr()).toBe(0);
  // Finished by the draining worker itself (no other worker polls this queue); a workflow is told of it too.
  const state = await delivered(s.submissionId);
  expect(state.recipients[0]).toMatchObject({ status: "delivered", attempts: 1 });
  expect(sink.copiesFor(s.to)).toHaveLength(1);
  expect(await workflowStatus(s.submissionId)).toBe(workflows === "deferred" ? null : "COMPLETED");
}, 150_000);

test.each(ATTEMPTS)("when %s outlasts SHUTDOWN_TIMEOUT_MS, the worker hands it back and exits 0; the next worker delivers it", async (_name, workflows) => {
  const taskQueue = uniqueName("drain-worker");
  // A third of it is the attempt's grace, well within the peer's hold; the rest (recording the cut attempt, the
  // Temporal worker's own shutdown) must end within the other two thirds or the process exits 1, which 4 s (2.7 s
  // for the rest) did not leave a loaded machine.
  const worker = await role("worker", { TEMPORAL_TASK_QUEUE: taskQueue, SHUTDOWN_TIMEOUT_MS: "15000", DELIVERY_WORKFLOWS: workflows });
  sink.holdData(1, 120_000);
  const s = await deliveryUnderWay(taskQueue);

  expect(await worker.kill("SIGTERM"), worker.stderr()).toBe(0);
  // The attempt was cut and recorded as deferred; the submission's workflow (handed it by the queue, or its own)
  // goes on with the next worker.
  expect((await submissionState(app.db, s.submissionId)).recipients[0]).toMatchObject({ status: "deferred", attempts: 1 });
  expect(await workflowStatus(s.submissionId)).toBe("RUNNING");

  sink.releaseData();
  await role("worker", { TEMPORAL_TASK_QUEUE: taskQueue });
  const state = await delivered(s.submissionId);
  expect(state.recipients[0]).toMatchObject({ status: "delivered" });
  // The peer may have taken the first copy (its reply was lost with the cut attempt): one duplicate at most.
  const copies = sink.copiesFor(s.to);
  expect(copies.length).toBeGreaterThanOrEqual(1);
  expect(copies.length).toBeLessThanOrEqual(2);
}, 150_000);
