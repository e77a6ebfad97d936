// The delivery queue end to end, through the API and a real worker: a send is announced, claimed and delivered
// at its first attempt by the worker itself, with no workflow; a recipient deferred there is handed to its
// workflow, which retries after the backoff; a claim whose lease ran out (its worker died) is taken over within
// seconds, and only by workers of its own task queue; a worker that starts takes up what was accepted while none
// listened; deliveries to one next hop share a kept SMTP connection,
// which is closed once idle; past capacity the API answers 503 delivery_backlog with Retry-After instead of
// accepting work it cannot start, and accepts again once the backlog is gone.
import { WorkflowNotFoundError } from "@temporalio/client";
import { afterAll, beforeAll, expect, test } from "vitest";
import { deliveryWorkflowId } from "../../src/temporal/client.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { insertSubmission, submissionState } from "../support/outbound-fixtures.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

const apps: TestApp[] = [];
const sinks: SmtpSink[] = [];
afterAll(async () => {
  for (const app of apps) await app.stop();
  for (const sink of sinks) await sink.stop();
});

async function appWithSink(env: Record<string, string>): Promise<{ app: TestApp; sink: SmtpSink; tenant: Tenant; inboxId: string }> {
  const sink = await startSmtpSink();
  sinks.push(sink);
  const app = await startTestApp({ SMTP_ROUTES: `sink.test=127.0.0.1:${sink.port}`, ...env });
  apps.push(app);
  const tenant = await app.createTenant({ messagesPerMinute: 10_000, messagesPerDay: 10_000, recipientsPerDay: 10_000 });
  const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("queue"), displayName: "Q" } });
  expect(inbox.status).toBe(201);
  return { app, sink, tenant, inboxId: inbox.body.id };
}

function send(tenant: Tenant, inboxId: string, to: string) {
  return tenant.request("POST", `/v1/inboxes/${inboxId}/messages`, {
    body: { to: [{ email: to }], subject: "queue", text: "hello" },
    headers: { "idempotency-key": uniqueName("k") },
  });
}

async function delivered(tenant: Tenant, submissionId: string): Promise<void> {
  await eventually(async () => ((await tenant.request("GET", `/v1/submissions/${submissionId}`)).body.status === "delivered" ? true : undefined), 30_000);
}

let reuse: Awaited<ReturnType<typeof appWithSink>>;
beforeAll(async () => {
  reuse = await appWithSink({ DELIVERY_CONNECTION_IDLE_MS: "300000", DELIVERY_RETRY_INITIAL: "1s" });
  await reuse.app.startWorker();
});

/** The delivery workflow of a submission, or undefined when it has none. */
async function workflowOf(app: TestApp, submissionId: string) {
  try {
    return await app.temporal.workflow.getHandle(deliveryWorkflowId(submissionId)).describe();
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return undefined;
    throw e;
  }
}

test("sends are delivered one after another over one kept connection, at their first attempt and without a workflow", async () => {
  const { app, sink, tenant, inboxId } = reuse;
  for (let i = 0; i < 3; i++) {
    const to = `${uniqueName("kept")}@sink.test`;
    const res = await send(tenant, inboxId, to);
    expect(res.status).toBe(202);
    await delivered(tenant, res.body.submission.id);
    expect(sink.copiesFor(to)).toHaveLength(1);
    const state = await submissionState(app.db, res.body.submission.id);
    expect(state.recipients).toMatchObject([{ status: "delivered", attempts: 1 }]);
    expect(await workflowOf(app, res.body.submission.id)).toBeUndefined();
  }
  // One connection for the three (with a connection per message there were three), still open for the next.
  expect(sink.connections).toEqual({ accepted: 1, open: 1 });
});

test("a recipient deferred at the first attempt is handed to the submission's workflow, which retries it after the backoff", async () => {
  const { app, sink, tenant, inboxId } = reuse;
  const to = `${uniqueName("defer")}@sink.test`;
  const res = await send(tenant, inboxId, to);
  expect(res.status).toBe(202);
  const id = res.body.submission.id as string;
  const deferred = await eventually(async () => {
    const state = await submissionState(app.db, id);
    return state.status === "deferred" ? state : undefined;
  }, 30_000);
  expect(deferred.recipients).toMatchObject([{ status: "deferred", attempts: 1, failureCode: "smtp_4.2.0" }]);
  const workflow = await eventually(() => workflowOf(app, id), 30_000);
  expect(workflow.type).toBe("delivery");
  // The handover ends the claim's lease once the workflow has started: nobody takes it over.
  await eventually(async () => {
    const [lease] = await app.db.sql.query<{ claim_expires_at: Date | null }>("select claim_expires_at from submissions where id = $1", [id]);
    return lease!.claim_expires_at === null ? true : undefined;
  }, 10_000);

  sink.recover(to);
  const state = await eventually(async () => {
    const x = await submissionState(app.db, id);
    return x.status === "delivered" ? x : undefined;
  }, 30_000);
  // The workflow's retry, after DELIVERY_RETRY_INITIAL: the second attempt, not a second first attempt at once.
  expect(state.recipients).toMatchObject([{ status: "delivered", attempts: 2 }]);
  expect(sink.rcpts.filter((r) => r.address === to).map((r) => r.code)).toEqual([451, 250]);
  expect(sink.copiesFor(to)).toHaveLength(1);
});

test("a claim whose lease ran out is taken over within seconds by a worker of its task queue, and only of its own", async () => {
  const { app, sink, tenant } = reuse;
  const sender = `${uniqueName("agent")}@${app.config.managedDomain}`;
  // What a worker killed between its claim and its first attempt leaves: queued, never attempted, its lease out.
  const strand = async (taskQueue: string) => {
    const to = `${uniqueName("lease")}@sink.test`;
    const s = await insertSubmission(app.db, { organizationId: tenant.organizationId, from: { email: sender }, to: [{ email: to }], withMessage: true, taskQueue });
    await app.db.sql.query(
      `with r as (update submission_recipients set status = 'queued' where submission_id = $1)
       update submissions set status = 'queued', claim_expires_at = now() - interval '1 second' where id = $1`,
      [s.submissionId],
    );
    return { ...s, to };
  };
  const ours = await strand(app.config.temporalTaskQueue);
  const foreign = await strand(uniqueName("another-deployment"));
  const began = Date.now();
  await delivered(tenant, ours.submissionId);
  // Within a few lease checks (every 2 s), not the reconciler's minutes.
  expect(Date.now() - began).toBeLessThan(15_000);
  expect(sink.copiesFor(ours.to)).toHaveLength(1);
  expect(await workflowOf(app, ours.submissionId)).toMatchObject({ type: "delivery" });
  // Another deployment's claim is its own workers' to take over.
  expect((await submissionState(app.db, foreign.submissionId)).status).toBe("queued");
  expect(await workflowOf(app, foreign.submissionId)).toBeUndefined();
  expect(sink.copiesFor(foreign.to)).toHaveLength(0);
  await app.db.sql.query("update submissions set claim_expires_at = null where id = $1", [foreign.submissionId]);
});

test("a worker that starts takes up at once what was accepted while no worker of its queue listened", async () => {
  const { app, sink, tenant } = await appWithSink({});
  const to = `${uniqueName("unheard")}@sink.test`;
  // Committed and announced to nobody: pending, younger than the reconciler's 30 s.
  const s = await insertSubmission(app.db, {
    organizationId: tenant.organizationId,
    from: { email: `${uniqueName("agent")}@${app.config.managedDomain}` },
    to: [{ email: to }],
    withMessage: true,
    taskQueue: app.config.temporalTaskQueue,
  });
  await app.startWorker();
  await delivered(tenant, s.submissionId);
  expect(sink.copiesFor(to)).toHaveLength(1);
});

test("a kept connection is closed once it has been idle for DELIVERY_CONNECTION_IDLE_MS", async () => {
  const { app, sink, tenant, inboxId } = await appWithSink({ DELIVERY_CONNECTION_IDLE_MS: "200" });
  await app.startWorker();
  const res = await send(tenant, inboxId, `${uniqueName("idle")}@sink.test`);
  await delivered(tenant, res.body.submission.id);
  expect(sink.connections.accepted).toBe(1);
  await eventually(async () => (sink.connections.open === 0 ? true : undefined));
});

test("past capacity sends are refused with 503 delivery_backlog and Retry-After, and accepted again once delivery catches up", async () => {
  // One first attempt at a time, and a peer that sits on its answer to DATA: everything after it waits, pending.
  const { app, sink, tenant, inboxId } = await appWithSink({ DELIVERY_CONCURRENCY: "1", DELIVERY_BACKLOG_MAX_S: "2" });
  sink.holdData(1, 120_000);
  const worker = await app.startWorker();
  try {
    const first = await send(tenant, inboxId, `${uniqueName("held")}@sink.test`);
    expect(first.status).toBe(202);
    await eventually(async () => (sink.transactions.length === 1 ? true : undefined), 30_000);
    // Sends go on being accepted until the oldest waiting one has waited half of DELIVERY_BACKLOG_MAX_S.
    const accepted: string[] = [];
    const refused = await eventually(async () => {
      const res = await send(tenant, inboxId, `${uniqueName("waiting")}@sink.test`);
      if (res.status !== 202) return res;
      accepted.push(res.body.submission.id);
      return undefined;
    }, 30_000);
    expect([refused.status, refused.body.error]).toEqual([503, "delivery_backlog"]);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    expect((await tenant.request("GET", `/v1/submissions/${accepted[0]}`)).body.status).toBe("pending");

    // The peer answers: what waited is delivered, and sends are accepted again.
    sink.releaseData();
    for (const id of [first.body.submission.id, ...accepted]) await delivered(tenant, id);
    const again = await eventually(async () => {
      const res = await send(tenant, inboxId, `${uniqueName("again")}@sink.test`);
      return res.status === 202 ? res : undefined;
    }, 30_000);
    await delivered(tenant, again.body.submission.id);
  } finally {
    await worker.stop();
  }
});
