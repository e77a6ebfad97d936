// Outbound delivery against a real SMTP peer (test/support/smtp-sink.ts) through SMTP_ROUTES, with the real
// worker, Temporal and PostgreSQL: one workflow per submission, per-recipient outcomes, retries, bounces with
// suppressions, domains that do not wait for each other, the queue lifetime, the reconciler, and DKIM.
import { dkimVerify } from "mailauth";
import { afterAll, beforeAll, expect, test } from "vitest";
import { managedDkimRecord } from "../../src/outbound/delivery/managed-dkim.js";
import { deliveryReconciler } from "../../src/outbound/delivery/reconciler.js";
import { reconcile } from "../../src/jobs/periodic-jobs.js";
import { createDeliveryStarter, deliveryWorkflowId } from "../../src/temporal/client.js";
import { insertSubmission, submissionState, type SubmissionState } from "../support/outbound-fixtures.js";
import { eventually, startTestApp, uniqueName, type TestApp, type Tenant } from "../support/harness.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

let app: TestApp;
let sink: SmtpSink;
let tenant: Tenant;
let sender: string;

beforeAll(async () => {
  sink = await startSmtpSink();
  app = await startTestApp({
    // Two recipient domains on one peer, so each domain's schedule can be told apart.
    SMTP_ROUTES: `sink.test=127.0.0.1:${sink.port},slow.test=127.0.0.1:${sink.port}`,
    DELIVERY_RETRY_INITIAL: "200ms",
    DELIVERY_RETRY_MAX: "400ms",
    DELIVERY_TIMEOUT_MS: "5000",
  });
  await app.startWorker();
  tenant = await app.createTenant();
  sender = `${uniqueName("agent")}@${app.config.managedDomain}`;
});
afterAll(async () => {
  await app?.stop();
  await sink?.stop();
});

const start = (submission: { submissionId: string }) =>
  createDeliveryStarter(app.temporal, app.config.temporalTaskQueue).start({ ...submission, organizationId: tenant.organizationId, inboxId: null });

/** Polls the submission until `done` holds. */
function until(submissionId: string, done: (s: SubmissionState) => boolean, timeoutMs = 20_000): Promise<SubmissionState> {
  return eventually(async () => {
    const state = await submissionState(app.db, submissionId);
    return done(state) ? state : undefined;
  }, timeoutMs);
}

const addr = (local: string, domain = "sink.test") => `${uniqueName(local)}@${domain}`;

test("delivers to every recipient in one transaction, DKIM-signed with the managed key, and records the responses", async () => {
  const to = [addr("alice"), addr("bob")];
  const s = await insertSubmission(app.db, { organizationId: tenant.organizationId, from: { email: sender, name: "Agent" }, to: to.map((email) => ({ email })), withMessage: true });
  await start(s);
  const state = await until(s.submissionId, (x) => x.status === "delivered");

  expect(state).toMatchObject({ status: "delivered", failureCode: null, message: { deliveryStatus: "delivered", failureCode: null } });
  expect(state.queueId).toMatch(/^[0-9A-F]{32}$/);
  expect(state.response).toMatch(/^250 2\.0\.0 Ok: queued as SINK\d+$/);
  for (const r of state.recipients) {
    expect(r).toMatchObject({ status: "delivered", failureCode: null, attempts: 1 });
    expect(r.response).toMatch(/^250 /);
    expect(r.deliveredAt).toBeInstanceOf(Date);
  }

  // Exactly one transaction, one RCPT per recipient, the envelope sender, over STARTTLS.
  const copies = sink.transactions.filter((t) => t.to.some((a) => to.includes(a)));
  expect(copies).toHaveLength(1);
  const [copy] = copies;
  expect(copy!.to).toEqual(to);
  expect(copy!.from).toBe(sender);
  expect(copy!.secure).toBe(true);
  expect(copy!.helo).toBe(app.config.smtp.hostname);
  expect(sink.rcpts.filter((r) => to.includes(r.address))).toHaveLength(2);
  const raw = copy!.raw.toString("utf8");
  expect(raw).toContain(`Message-ID: ${s.internetMessageId}`);
  expect(raw).toContain("Subject: Delivery test");
  expect(raw).toMatch(/^DKIM-Signature: /m);
  // The stored bytes follow the signature unchanged (line ends as SMTP carries them).
  const crlf = (b: Buffer) => b.toString("utf8").replace(/\r?\n/g, "\r\n");
  expect(crlf(copy!.raw).endsWith(crlf(s.mime))).toBe(true);

  const record = await managedDkimRecord(app.config);
  expect(record.name).toBe(`${app.config.delivery.managedDkimSelector}._domainkey.${app.config.managedDomain}`);
  const verified = await dkimVerify(copy!.raw, {
    resolver: async (name: string, type: string) => {
      if (type === "TXT" && name === record.name) return [[record.value]];
      throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    },
  });
  expect(verified.results).toHaveLength(1);
  expect(verified.results[0]).toMatchObject({ signingDomain: app.config.managedDomain, selector: app.config.delivery.managedDkimSelector, status: { result: "pass" } });

  // The workflow is found by its business key and tenant. It closes just after its last activity records the
  // delivery, so the row can read delivered while it still runs: wait for its result first.
  const handle = app.temporal.workflow.getHandle(deliveryWorkflowId(s.submissionId));
  await handle.result();
  const description = await handle.describe();
  expect(description.status.name).toBe("COMPLETED");
  expect(description.searchAttributes).toMatchObject({ MailboxOrganizationId: [tenant.organizationId] });

  // Starting it again after it closed delivers nothing more.
  await start(s);
  await new Promise((r) => setTimeout(r, 500));
  expect(sink.transactions.filter((t) => t.to.some((a) => to.includes(a)))).toHaveLength(1);
});

test("a 451 defers the recipient, which is retried and delivered once the peer recovers", async () => {
  const to = addr("defer");
  const s = await insertSubmission(app.db, { organizationId: tenant.organizationId, from: { email: sender }, to: [{ email: to }], withMessage: true });
  await start(s);
  const deferred = await until(s.submissionId, (x) => x.recipients[0]!.attempts >= 2);
  expect(deferred).toMatchObject({ status: "deferred", message: { deliveryStatus: "deferred" } });
  expect(deferred.recipients[0]).toMatchObject({ status: "deferred", failureCode: "smtp_4.2.0", response: expect.stringMatching(/^451 4\.2\.0 /) });

  sink.recover(to);
  const delivered = await until(s.submissionId, (x) => x.status === "delivered");
  expect(delivered.recipients[0]).toMatchObject({ status: "delivered", failureCode: null, response: expect.stringMatching(/^250 /) });
  expect(delivered.recipients[0]!.attempts).toBeGreaterThanOrEqual(3);
  expect(delivered.message).toEqual({ deliveryStatus: "delivered", failureCode: null });
  expect(sink.copiesFor(to)).toHaveLength(1);

  // The waits between attempts, as the workflow's timers recorded them: 200 ms doubling, capped at 400 ms.
  const history = await app.temporal.workflow.getHandle(deliveryWorkflowId(s.submissionId)).fetchHistory();
  const waits = (history.events ?? [])
    .map((e) => e.timerStartedEventAttributes?.startToFireTimeout)
    .filter((d) => d != null)
    .map((d) => Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6));
  expect(waits.length).toBe(delivered.recipients[0]!.attempts - 1);
  expect(waits).toEqual([200, 400, ...Array(waits.length - 2).fill(400)]);
});

test("a 550 5.1.1 bounces the recipient and suppresses the address; the other recipient is delivered", async () => {
  const good = addr("carol");
  const bad = addr("nobody");
  const s = await insertSubmission(app.db, { organizationId: tenant.organizationId, from: { email: sender }, to: [{ email: good }, { email: bad }], withMessage: true });
  await start(s);
  const state = await until(s.submissionId, (x) => x.recipients.every((r) => ["delivered", "bounced", "failed"].includes(r.status)));
  expect(state).toMatchObject({ status: "partially_delivered", failureCode: null, message: { deliveryStatus: "partially_delivered" } });
  expect(state.recipients[0]).toMatchObject({ status: "delivered" });
  expect(state.recipients[1]).toMatchObject({ status: "bounced", failureCode: "smtp_5.1.1", response: expect.stringMatching(/^550 5\.1\.1 /) });
  const suppressions = await app.db.query<{ email: string; reason: string }>(
    `select email, reason from suppressions where organization_id = ? and email = ?`,
    [tenant.organizationId, bad.toLowerCase()],
  );
  expect(suppressions).toEqual([{ email: bad.toLowerCase(), reason: "hard_bounce" }]);
});

test("a submission whose every recipient is refused fails with the refusal's code; a policy refusal is not suppressed", async () => {
  const policy = addr("policy");
  const s = await insertSubmission(app.db, { organizationId: tenant.organizationId, from: { email: sender }, to: [{ email: policy }], withMessage: true });
  await start(s);
  const state = await until(s.submissionId, (x) => x.status === "failed");
  expect(state).toMatchObject({ failureCode: "smtp_5.7.1", message: { deliveryStatus: "failed", failureCode: "smtp_5.7.1" } });
  expect(state.recipients[0]).toMatchObject({ status: "failed", failureCode: "smtp_5.7.1" });
  expect(await app.db.query(`select 1 from suppressions where organization_id = ? and email = ?`, [tenant.organizationId, policy])).toEqual([]);
});

test("a deferring domain does not delay another domain of the same submission", async () => {
  const slow = addr("defer", "slow.test");
  const fast = addr("dave");
  const s = await insertSubmission(app.db, { organizationId: tenant.organizationId, from: { email: sender }, to: [{ email: slow }, { email: fast }] });
  await start(s);
  const state = await until(s.submissionId, (x) => x.recipients[1]!.status === "delivered");
  expect(state.status).toBe("partially_delivered");
  expect(state.recipients[0]!.status).toMatch(/^(queued|deferred)$/);
  expect(state.recipients[1]!.attempts).toBe(1);
  // One transaction per domain: the fast domain's copy did not carry the slow recipient.
  expect(sink.copiesFor(fast).map((t) => t.to)).toEqual([[fast]]);

  sink.recover(slow);
  const done = await until(s.submissionId, (x) => x.status === "delivered");
  expect(done.recipients.map((r) => r.status)).toEqual(["delivered", "delivered"]);
});

test("a recipient still deferred when the queue lifetime runs out fails with queue_lifetime_exceeded", async () => {
  const to = addr("defer");
  // Committed just under the lifetime ago: the first attempts are deferred, then the lifetime is over.
  const createdAt = new Date(Date.now() - app.config.delivery.queueLifetimeMs + 1_500);
  const s = await insertSubmission(app.db, { organizationId: tenant.organizationId, from: { email: sender }, to: [{ email: to }], withMessage: true, createdAt });
  await start(s);
  const state = await until(s.submissionId, (x) => x.status === "failed");
  expect(state).toMatchObject({ failureCode: "queue_lifetime_exceeded", message: { deliveryStatus: "failed", failureCode: "queue_lifetime_exceeded" } });
  expect(state.recipients[0]).toMatchObject({ status: "failed", failureCode: "queue_lifetime_exceeded", response: expect.stringMatching(/^451 /) });
  expect(state.recipients[0]!.attempts).toBeGreaterThanOrEqual(1);
  expect(sink.copiesFor(to)).toHaveLength(0);
});

test("the reconciler starts the delivery of a submission stranded as pending", async () => {
  const to = addr("erin");
  const s = await insertSubmission(app.db, {
    organizationId: tenant.organizationId,
    from: { email: sender },
    to: [{ email: to }],
    withMessage: true,
    createdAt: new Date(Date.now() - 60_000),
    taskQueue: app.config.temporalTaskQueue,
  });
  expect((await submissionState(app.db, s.submissionId)).message).toEqual({ deliveryStatus: "submitted", failureCode: null });
  const starter = createDeliveryStarter(app.temporal, app.config.temporalTaskQueue);
  const started: string[] = [];
  // Only this test's tenant: the database is shared with other test files and their task queues.
  const count = await reconcile(deliveryReconciler(app.db, app.config.temporalTaskQueue, {
    start: async (x) => {
      if (x.organizationId !== tenant.organizationId) return;
      started.push(x.submissionId);
      await starter.start(x);
    },
  }));
  expect(count).toBeGreaterThanOrEqual(1);
  expect(started).toEqual([s.submissionId]);
  const state = await until(s.submissionId, (x) => x.status === "delivered");
  expect(state.message).toEqual({ deliveryStatus: "delivered", failureCode: null });
  expect(sink.copiesFor(to)).toHaveLength(1);
});
