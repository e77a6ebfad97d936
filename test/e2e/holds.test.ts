// Sends that wait for a person, through the real service: the holdFor policy of the key or organization (first
// contact, new domain, all) holds a send at acceptance; the delivery workflow waits for the decision as a signal
// with a HOLD_TIMEOUT timer; approve, reject and the timeout each end it exactly once, as PostgreSQL decides; a
// worker restart or a lost signal loses no decision; submission.held reaches the event stream and the webhooks that
// asked for it; and the Temporal UI (the workflow's static summary, current details, result and activity results)
// tells what happened without the API.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTransport } from "nodemailer";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { admin } from "../../src/cli/admin.js";
import { reconcile } from "../../src/jobs/periodic-jobs.js";
import { holdReconciler } from "../../src/outbound/delivery/hold-reconciler.js";
import { decideHeld } from "../../src/outbound/holds.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { createDeliveryStarter, createHoldDecisionNotifier, deliveryWorkflowId } from "../../src/temporal/client.js";
import { verifiedDomain } from "../support/customer-domains.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { startHttpsReceiver, verifySignature, type HttpsReceiver } from "../support/https-receiver.js";
import { activityResults, attemptResults } from "../support/delivery-history.js";
import { serveRole } from "../support/role-process.js";
import { submissionState } from "../support/outbound-fixtures.js";
import { openSse } from "../support/sse-client.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

let app: TestApp;
let sink: SmtpSink;
let receiver: HttpsReceiver;
let dns: TestDnsServer;
let smtp: SmtpRole;
let worker: { stop(): Promise<void> };

beforeAll(async () => {
  [sink, receiver, dns] = await Promise.all([startSmtpSink(), startHttpsReceiver(), startDnsServer()]);
  app = await startTestApp({
    SMTP_ROUTES: `*=127.0.0.1:${sink.port}`,
    WEBHOOK_ALLOW_HOSTS: receiver.host,
    DNS_SERVERS: dns.serverList,
    DNS_TIMEOUT_MS: "200",
  });
  worker = await app.startWorker();
  smtp = await app.startSmtp();
});
afterAll(async () => {
  await app?.stop();
  await Promise.all([sink?.stop(), receiver?.close(), dns?.stop()]);
});

const at = (local: string, domain = "sink.test") => `${uniqueName(local)}@${domain}`;

/** An organization whose agent key sends under `holdFor`, and a person's key that may decide (delivery:approve). */
async function organization(holdFor: "first_contact" | "new_domain" | "all", on: "key" | "organization" = "key") {
  const owner = await app.createTenant(on === "organization" ? { holdFor } : {});
  const agent = await owner.issueKey({ scopes: ["mailbox:send", "mailbox:read", "delivery:read"], ...(on === "key" ? { holdFor } : {}) });
  const person = await owner.issueKey({ scopes: ["delivery:approve", "delivery:read"] });
  const inbox = (await owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("agent"), displayName: "Agent" } })).body as { id: string; address: string };
  const as = (k: { key: string }) => ({ "x-api-key": k.key });
  return {
    owner,
    agent,
    person,
    inbox,
    send: (to: string, extra: object = {}) =>
      owner.request("POST", `/v1/inboxes/${inbox.id}/messages`, {
        body: { to: [{ email: to }], subject: "Hello", text: "Hi", ...extra },
        headers: { ...as(agent), "idempotency-key": uniqueName("hold") },
      }),
    decide: (submissionId: string, decision: "approve" | "reject", by: { key: string } = person) =>
      owner.request("POST", `/v1/submissions/${submissionId}:${decision}`, { body: {}, headers: as(by) }),
    submission: (submissionId: string) => owner.request("GET", `/v1/submissions/${submissionId}`).then((r) => r.body),
  };
}

const handleOf = (submissionId: string, on: TestApp = app) => on.temporal.workflow.getHandle(deliveryWorkflowId(submissionId));

/** The workflow of a held submission, once it waits for the decision (it entered the hold: its queue id is set). */
async function waiting(submissionId: string, read: (id: string) => Promise<any>) {
  return eventually(async () => ((await read(submissionId)).queueId ? handleOf(submissionId) : undefined));
}

/** On an app of its own (its worker started here): an organization holding every send, a person's key, one held send. */
async function heldSendOn(on: TestApp, local: string) {
  await on.startWorker();
  const owner = await on.createTenant({ holdFor: "all" });
  const person = await owner.issueKey({ scopes: ["delivery:approve"] });
  const inbox = (await owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName(local), displayName: "Held" } })).body;
  const to = at(local);
  const held = (await owner.request("POST", `/v1/inboxes/${inbox.id}/messages`, {
    body: { to: [{ email: to }], subject: "s", text: "t" },
    headers: { "idempotency-key": uniqueName(local) },
  })).body.submission as { id: string };
  return { owner, person, held, to };
}

/** Mail from `from` to the inbox over SMTP, stored (and its sender a contact of the inbox) once this resolves. */
async function receive(owner: Tenant, inbox: { id: string; address: string }, from: string): Promise<void> {
  await createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, tls: { rejectUnauthorized: false } }).sendMail({
    from,
    to: inbox.address,
    subject: "Question",
    text: "Can you help?",
  });
  await eventually(async () => ((await owner.request("GET", `/v1/inboxes/${inbox.id}/threads`)).body.threads.length > 0 ? true : undefined));
}

describe("what is held", () => {
  test("first_contact holds a send to an address the inbox never exchanged mail with, until an approval makes it a contact", async () => {
    const org = await organization("first_contact");
    const known = at("customer");
    await receive(org.owner, org.inbox, known);
    const toKnown = await org.send(known);
    expect(toKnown.status).toBe(202);
    expect(toKnown.body.submission).toMatchObject({ status: "pending", heldReason: null });

    const stranger = at("stranger");
    const held = await org.send(stranger, { cc: [{ email: known }] });
    expect(held.status).toBe(202);
    expect(held.body.submission).toMatchObject({ status: "held", heldReason: "first_contact", queueId: null });
    expect(held.body.submission.recipients.map((r: any) => [r.email, r.status])).toEqual([
      [stranger, "held"],
      [known, "held"],
    ]);
    expect(held.body.message.delivery).toMatchObject({ status: "held", submissionId: held.body.submission.id });

    expect((await org.decide(held.body.submission.id, "approve")).status).toBe(200);
    await eventually(async () => ((await org.submission(held.body.submission.id)).status === "delivered" ? true : undefined));
    expect(sink.copiesFor(stranger)).toHaveLength(1);
    // Approved, the stranger is a contact now.
    expect((await org.send(stranger)).body.submission.status).toBe("pending");
  });

  test("new_domain holds only a domain the inbox never exchanged mail with", async () => {
    const org = await organization("new_domain");
    await receive(org.owner, org.inbox, at("someone", "known.test"));
    expect((await org.send(at("colleague", "known.test"))).body.submission.status).toBe("pending");
    const held = await org.send(at("someone", "unknown.test"));
    expect(held.body.submission).toMatchObject({ status: "held", heldReason: "new_domain" });
  });

  test("the organization's policy holds when the key has none; the key's wins when set; GET /v1/me says both", async () => {
    const org = await organization("all", "organization");
    expect((await org.send(at("anyone"))).body.submission).toMatchObject({ status: "held", heldReason: "all" });
    const me = await org.owner.request("GET", "/v1/me", { headers: { "x-api-key": org.agent.key } });
    expect([me.body.organization.holdFor, me.body.apiKey.holdFor]).toEqual(["all", null]);
    // The operator gives a key its own policy (mailbox admin key update --hold-for none).
    await admin(app.db, app.config, "key update", { id: org.agent.id, "hold-for": "none" });
    expect((await org.send(at("anyone"))).body.submission.status).toBe("pending");
    const after = await org.owner.request("GET", "/v1/me", { headers: { "x-api-key": org.agent.key } });
    expect([after.body.organization.holdFor, after.body.apiKey.holdFor]).toEqual(["all", "none"]);
    // And an organization's (mailbox admin org update --id … --hold-for …); an unknown policy is a usage error.
    await admin(app.db, app.config, "org update", { id: org.owner.organizationId, "hold-for": "new_domain" });
    expect((await org.owner.request("GET", "/v1/me")).body.organization.holdFor).toBe("new_domain");
    await expect(admin(app.db, app.config, "key update", { id: org.agent.id, "hold-for": "sometimes" })).rejects.toThrow(/--hold-for must be one of none, first_contact, new_domain, all/);
  });

  test("/v1/send judges a first contact by its sender's address", async () => {
    const owner = await app.createTenant();
    const agent = await owner.issueKey({ scopes: ["delivery:send"], holdFor: "first_contact" });
    const domain = await verifiedDomain(owner, dns);
    const send = (to: string) =>
      owner.request("POST", "/v1/send", {
        body: { from: { email: `billing@${domain.domain}` }, to: [{ email: to }], subject: "Invoice", text: "Due." },
        headers: { "x-api-key": agent.key, "idempotency-key": uniqueName("v1send") },
      });
    const first = await send(at("payer"));
    expect(first.body.submission).toMatchObject({ status: "held", heldReason: "first_contact" });
  });
});

describe("deciding", () => {
  test("approve delivers it; the workflow waited in the Temporal UI as held and tells each recipient's outcome", async () => {
    const org = await organization("all");
    const to = at("approved");
    const held = (await org.send(to)).body.submission;
    const handle = await waiting(held.id, org.submission);
    const description = await handle.describe();
    expect(await description.staticSummary()).toBe("Held for approval (all): 1 recipient");
    expect(description.status.name).toBe("RUNNING");
    const metadata = await handle.query<{ currentDetails: string }>("__temporal_workflow_metadata");
    expect(metadata.currentDetails).toMatch(/^\*\*Waiting for approval\*\* \(held: all\) until \d{4}-\d\d-\d\dT/);
    expect(sink.copiesFor(to)).toHaveLength(0);

    const approved = await org.decide(held.id, "approve");
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ id: held.id, heldReason: "all" });
    expect(["pending", "queued", "delivered"]).toContain(approved.body.status);
    expect(await handle.result()).toEqual({ domains: 1, recipients: { delivered: 1 }, hold: "approved" });
    expect(await org.submission(held.id)).toMatchObject({ status: "delivered", heldReason: "all", recipients: [{ email: to, status: "delivered" }] });
    expect(sink.copiesFor(to)).toHaveLength(1);

    // The history names each recipient's outcome: its state and the peer's reply code and text.
    const results = await attemptResults(app.temporal, held.id);
    expect(results).toContainEqual({ remaining: 0, recipients: [{ email: to, status: "delivered", replyCode: 250, reply: expect.stringMatching(/^250 2\.0\.0 Ok: queued as SINK\d+$/) }] });
    expect((await handle.query<{ currentDetails: string }>("__temporal_workflow_metadata")).currentDetails).toBe("Recipients attempted: 1 delivered");
    // Its queue lifetime counted from the approval, not from the send: the wait was no delivery's.
    const [decided] = await app.db.sql.query<{ at: number }>("select (extract(epoch from decided_at) * 1000)::float8 as at from submissions where id = $1", [held.id]);
    const queued = (await activityResults(app.temporal, held.id)).find((r): r is { createdAtMs: number } => typeof r === "object" && r !== null && "queueLifetimeMs" in r);
    expect(queued!.createdAtMs).toBe(Number(decided!.at));
  });

  test("reject ends it with nothing sent; a second decision is 409; the sending key and keys without the scope cannot decide", async () => {
    const org = await organization("all");
    const to = at("rejected");
    const sent = (await org.send(to)).body;
    const held = sent.submission;
    const handle = await waiting(held.id, org.submission);
    expect(await org.decide(held.id, "approve", org.agent)).toMatchObject({ status: 403, body: { error: "missing_scope" } });
    const both = await org.owner.issueKey({ scopes: ["*"] });
    // The sending key may never decide, whatever its scopes: one that can approve sends its own.
    await admin(app.db, app.config, "key update", { id: both.id, "hold-for": "all" });
    const own = (await org.owner.request("POST", `/v1/inboxes/${org.inbox.id}/messages`, {
      body: { to: [{ email: at("own") }], subject: "Mine", text: "t" },
      headers: { "x-api-key": both.key, "idempotency-key": uniqueName("own") },
    })).body.submission;
    expect(await org.decide(own.id, "approve", both)).toMatchObject({ status: 403, body: { error: "own_submission" } });

    const rejected = await org.decide(held.id, "reject");
    expect(rejected).toMatchObject({ status: 200, body: { status: "rejected", failureCode: "rejected", recipients: [{ status: "rejected" }] } });
    expect(await handle.result()).toEqual({ domains: 0, hold: "rejected" });
    expect(sink.copiesFor(to)).toHaveLength(0);
    expect(await org.decide(held.id, "approve")).toMatchObject({ status: 409, body: { error: "submission_already_decided" } });
    expect(await org.decide(held.id, "reject")).toMatchObject({ status: 409, body: { error: "submission_already_decided" } });
    const plain = await org.owner.request("POST", `/v1/inboxes/${org.inbox.id}/messages`, {
      body: { to: [{ email: at("plain") }], subject: "s", text: "t" },
      headers: { "idempotency-key": uniqueName("plain") },
    });
    expect(await org.decide(plain.body.submission.id, "approve")).toMatchObject({ status: 409, body: { error: "submission_not_held" } });
    const thread = await org.owner.request("GET", `/v1/threads/${sent.message.threadId}`);
    expect(thread.body.messages[0].delivery).toMatchObject({ status: "rejected", failureCode: "rejected" });
  });

  test("of decisions made at once, exactly one wins", async () => {
    const org = await organization("all");
    const held = (await org.send(at("race"))).body.submission;
    const second = await org.owner.issueKey({ scopes: ["delivery:approve"] });
    const answers = await Promise.all([org.decide(held.id, "approve"), org.decide(held.id, "reject", second), org.decide(held.id, "approve", second)]);
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409).map((a) => a.body.error)).toEqual(["submission_already_decided", "submission_already_decided"]);
    // The submission is as the winner left it.
    expect((await org.submission(held.id)).status === "rejected").toBe(won[0]!.body.status === "rejected");
  });

  test("GET /v1/submissions?status=held is the queue of held sends, newest first, page by page", async () => {
    const org = await organization("all");
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await org.send(at("queue"))).body.submission.id);
    const list = (query: string) => org.owner.request("GET", `/v1/submissions?${query}`, { headers: { "x-api-key": org.person.key } });
    const first = await list("status=held&limit=2");
    expect(first.status).toBe(200);
    expect(first.body.submissions.map((s: any) => s.id)).toEqual([ids[2], ids[1]]);
    const second = await list(`status=held&limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body).toMatchObject({ submissions: [{ id: ids[0], status: "held" }], nextCursor: null });
    await org.decide(ids[1]!, "reject");
    expect((await list("status=held")).body.submissions.map((s: any) => s.id)).toEqual([ids[2], ids[0]]);
    expect((await list("status=rejected")).body.submissions.map((s: any) => s.id)).toEqual([ids[1]]);
    // A key restricted to another inbox sees none of them.
    const elsewhere = (await org.owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("other"), displayName: "Other" } })).body;
    const restricted = await org.owner.issueKey({ scopes: ["delivery:read"], inboxIds: [elsewhere.id] });
    expect((await org.owner.request("GET", "/v1/submissions?status=held", { headers: { "x-api-key": restricted.key } })).body.submissions).toEqual([]);
  });
});

describe("no decision is lost", () => {
  test("an approval made while no worker runs is delivered once a worker is back", async () => {
    const org = await organization("all");
    const to = at("restart");
    const held = (await org.send(to)).body.submission;
    const handle = await waiting(held.id, org.submission);
    await worker.stop();
    try {
      expect((await org.decide(held.id, "approve")).status).toBe(200);
      expect((await org.submission(held.id)).status).toBe("pending");
    } finally {
      worker = await app.startWorker();
    }
    expect(await handle.result()).toMatchObject({ hold: "approved", recipients: { delivered: 1 } });
    expect(sink.copiesFor(to)).toHaveLength(1);
  });

  test("a worker killed (kill -9) while a send is held loses no decision: the next worker delivers the approval", async () => {
    const org = await organization("all");
    const to = at("killed");
    await worker.stop();
    // A real worker process of this app's task queue takes the announcement and starts the hold's workflow.
    const victim = await serveRole("worker", {
      DATABASE_URL: app.config.databaseUrl!,
      TEMPORAL_ADDRESS: app.config.temporalAddress!,
      TEMPORAL_TASK_QUEUE: app.config.temporalTaskQueue,
      MANAGED_DOMAIN: app.config.managedDomain,
      DATA_DIR: await mkdtemp(join(tmpdir(), "mailbox-holds-")),
      SMTP_ROUTES: `*=127.0.0.1:${sink.port}`,
    });
    let held: { id: string };
    try {
      held = (await org.send(to)).body.submission;
      await waiting(held.id, org.submission);
    } finally {
      await victim.kill("SIGKILL");
    }
    // Decided while no worker runs: the signal waits in Temporal, the decision in PostgreSQL.
    expect((await org.decide(held.id, "approve")).status).toBe(200);
    expect(sink.copiesFor(to)).toHaveLength(0);
    worker = await app.startWorker();
    expect(await handleOf(held.id).result()).toMatchObject({ hold: "approved", recipients: { delivered: 1 } });
    expect(sink.copiesFor(to)).toHaveLength(1);
    expect((await submissionState(app.db, held.id)).recipients[0]).toMatchObject({ status: "delivered", attempts: 1 });
  }, 90_000);

  test("the hold reconciler starts a held send's lost workflow, and wakes one that missed its approval", async () => {
    const org = await organization("all");
    await worker.stop();
    let held: { id: string };
    try {
      // Sent while no worker listens: its announcement is lost, no workflow waits for it.
      held = (await org.send(at("lost"))).body.submission;
    } finally {
      worker = await app.startWorker();
    }
    await app.db.sql.query("update submissions set created_at = created_at - interval '1 minute' where id = $1", [held.id]);
    const queue = app.config.temporalTaskQueue;
    const reconciler = holdReconciler(app.db.sql, queue, createDeliveryStarter(app.temporal, queue), createHoldDecisionNotifier(app.temporal, queue));
    // Only this organization's rows: the database is shared with the other test files.
    const ofOrg = (rows: Awaited<ReturnType<typeof reconciler.stranded>>) => rows.filter((r) => (r.approved ? r.submission : r.held).organizationId === org.owner.organizationId);
    const ours = { ...reconciler, stranded: async () => ofOrg(await reconciler.stranded()) };
    // Another deployment's worker (another task queue on this database) leaves it to this one's.
    const elsewhere = holdReconciler(app.db.sql, uniqueName("elsewhere"), createDeliveryStarter(app.temporal, queue), createHoldDecisionNotifier(app.temporal, queue));
    expect(ofOrg(await elsewhere.stranded())).toEqual([]);
    expect(await reconcile(ours)).toBe(1);
    const handle = await waiting(held.id, org.submission);

    // Approved in PostgreSQL without a word to the workflow (the API died after its commit).
    await app.db.sql.transaction((tx) => decideHeld(tx, { submissionId: held.id }, "approved", org.person.id));
    await app.db.sql.query("update submissions set decided_at = decided_at - interval '1 minute' where id = $1", [held.id]);
    expect(await reconcile(ours)).toBe(1);
    expect(await handle.result()).toMatchObject({ hold: "approved", recipients: { delivered: 1 } });
    expect(await reconcile(ours)).toBe(0);
  });

  test("a hold nobody decides within HOLD_TIMEOUT is rejected as hold_expired, and cannot be approved after", async () => {
    const short = await startTestApp({ SMTP_ROUTES: `*=127.0.0.1:${sink.port}`, HOLD_TIMEOUT: "2s" });
    try {
      const { owner, person, held, to } = await heldSendOn(short, "expired");
      const handle = await eventually(() => handleOf(held.id, short).describe().then(() => handleOf(held.id, short), () => undefined));
      expect(await handle.result()).toEqual({ domains: 0, hold: "hold_expired" });
      const after = (await owner.request("GET", `/v1/submissions/${held.id}`)).body;
      expect(after).toMatchObject({ status: "rejected", failureCode: "hold_expired", heldReason: "all", recipients: [{ status: "rejected" }] });
      expect((await handle.query<{ currentDetails: string }>("__temporal_workflow_metadata")).currentDetails).toMatch(/^\*\*Hold expired\*\*/);
      const late = await owner.request("POST", `/v1/submissions/${held.id}:approve`, { body: {}, headers: { "x-api-key": person.key } });
      expect(late).toMatchObject({ status: 409, body: { error: "submission_already_decided" } });
      expect(sink.copiesFor(to)).toHaveLength(0);
    } finally {
      await short.stop();
    }
  });
});

describe("submission.held as an event", () => {
  test("comes on the event stream and to the webhooks that asked for it, never to the others", async () => {
    const org = await organization("all");
    const asked = receiver.endpoint();
    const notAsked = receiver.endpoint();
    const hook = await org.owner.request("POST", "/v1/webhooks", { body: { url: asked.url, events: ["submission.held"] }, headers: { "idempotency-key": uniqueName("held-hook") } });
    expect(hook).toMatchObject({ status: 201, body: { events: ["submission.held"] } });
    await org.owner.request("POST", "/v1/webhooks", { body: { url: notAsked.url, events: ["message.received"] }, headers: { "idempotency-key": uniqueName("other-hook") } });
    const stream = await openSse(`${app.baseUrl}/v1/events:stream`, { "x-api-key": org.owner.key });
    try {
      expect(stream.status).toBe(200);
      await stream.next();
      const held = (await org.send(at("evented"))).body;
      const frame = await stream.nextEvent();
      const event = JSON.parse(frame.data!);
      expect(event).toEqual({
        id: frame.id,
        type: "submission.held",
        createdAt: held.submission.createdAt,
        data: { messageId: held.message.id, inboxId: org.inbox.id, threadId: held.message.threadId, submissionId: held.submission.id },
      });
      const [delivered] = await asked.waitFor(1);
      expect(JSON.parse(delivered!.body)).toEqual(event);
      expect(verifySignature(hook.body.signingSecret, delivered!)).toBe(true);
      // A message.received endpoint got nothing: its delivery rows would have been made in the same transaction.
      const deliveriesTo = async (url: string) =>
        (
          await app.db.sql.query<{ type: string }>(
            "select d.event_type as type from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id where e.url = $1 order by d.created_at",
            [url],
          )
        ).map((r) => r.type);
      expect(await deliveriesTo(notAsked.url)).toEqual([]);
      expect(notAsked.requests).toEqual([]);
      // And the other way round: mail that arrives goes to message.received endpoints only.
      await receive(org.owner, org.inbox, at("writer"));
      const [received] = await notAsked.waitFor(1);
      expect(JSON.parse(received!.body).type).toBe("message.received");
      expect(JSON.parse((await stream.nextEvent()).data!).type).toBe("message.received");
      // Its delivery rows were made in the transaction that stored the mail: none for the endpoint that did not ask.
      expect(await deliveriesTo(asked.url)).toEqual(["submission.held"]);
      expect(await deliveriesTo(notAsked.url)).toEqual(["message.received"]);
      expect(asked.requests).toHaveLength(1);
    } finally {
      stream.close();
    }
  });
});

describe("with DELIVERY_WORKFLOWS=all", () => {
  test("a held send waits the same, unattempted, and its workflow delivers the approval", async () => {
    const all = await startTestApp({ SMTP_ROUTES: `*=127.0.0.1:${sink.port}`, DELIVERY_WORKFLOWS: "all" });
    try {
      const { owner, person, held, to } = await heldSendOn(all, "all-mode");
      const read = (id: string) => owner.request("GET", `/v1/submissions/${id}`).then((r) => r.body);
      await eventually(async () => ((await read(held.id)).queueId ? true : undefined));
      const handle = handleOf(held.id, all);
      expect(await (await handle.describe()).staticSummary()).toBe("Held for approval (all): 1 recipient");
      expect((await submissionState(all.db, held.id)).recipients[0]).toMatchObject({ status: "held", attempts: 0 });
      expect(sink.copiesFor(to)).toHaveLength(0);

      expect((await owner.request("POST", `/v1/submissions/${held.id}:approve`, { body: {}, headers: { "x-api-key": person.key } })).status).toBe(200);
      expect(await handle.result()).toEqual({ domains: 1, recipients: { delivered: 1 }, hold: "approved" });
      expect(sink.copiesFor(to)).toHaveLength(1);
      expect(await attemptResults(all.temporal, held.id)).toHaveLength(1);
    } finally {
      await all.stop();
    }
  });
});
