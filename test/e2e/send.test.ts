// Outbound acceptance through the JSON API: send, reply and /v1/send answer 202 with the stored message and its
// submission; idempotency, strict addresses and every sending policy answer their documented errors. Delivery
// itself (the deliver/<submissionId> workflow) is tested in delivery*.test.ts; here a worker runs only where a test
// starts one, so accepted submissions stay pending until then (and are deferred after: nothing listens on port 9).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Message, Submission, SubmissionRecipient, Suppression } from "../../src/db/entities/index.js";
import { deliveryWorkflowId } from "../../src/temporal/client.js";
import { eventually, startTestApp, uniqueName, type TestApp, type Tenant } from "../support/harness.js";
import { storeInbound } from "../support/mail-fixtures.js";

let app: TestApp;

beforeAll(async () => {
  // Nothing listens on port 9: any delivery a worker attempts here is deferred, never sent anywhere.
  app = await startTestApp({ LIMIT_RECIPIENTS_PER_MESSAGE: "5", LIMIT_MESSAGE_CONTENT_BYTES: "4096", SMTP_ROUTES: "*=127.0.0.1:9" });
});
afterAll(async () => {
  await app?.stop();
});

const key = () => `k-${randomBytes(8).toString("hex")}`;

async function inboxOf(tenant: Tenant, localPart = uniqueName("agent")): Promise<{ id: string; address: string }> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart, displayName: "Agent Smith" } });
  expect(res.status).toBe(201);
  return res.body;
}

function send(tenant: Tenant, inboxId: string, body: unknown, idempotencyKey: string | null = key()) {
  return tenant.request("POST", `/v1/inboxes/${inboxId}/messages`, {
    body,
    headers: idempotencyKey === null ? {} : { "idempotency-key": idempotencyKey },
  });
}

const basic = { to: [{ email: "Alice@Example.COM", name: "Alice" }], subject: "Hello", text: "Hi Alice" };

describe("send from an inbox", () => {
  test("answers 202 with the stored outbound message, its pending submission and its thread", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const k = key();
    const body = { ...basic, html: "<p>Hi Alice</p>", replyTo: { email: "desk@example.com" }, metadata: { ticket: "T-1", priority: 2 } };
    const res = await send(tenant, inbox.id, body, k);
    expect(res.status).toBe(202);
    const { message, submission, replayed } = res.body;
    expect(replayed).toBe(false);
    expect(message).toMatchObject({
      inboxId: inbox.id,
      direction: "outbound",
      inReplyTo: null,
      references: [],
      from: { email: inbox.address, name: "Agent Smith" },
      to: [{ email: "alice@example.com", name: "Alice" }],
      subject: "Hello",
      text: "Hi Alice",
      html: "<p>Hi Alice</p>",
      replyTo: { email: "desk@example.com" },
      metadata: { ticket: "T-1", priority: 2 },
      delivery: { submissionId: submission.id, status: "submitted", failureCode: null },
    });
    expect(message.id).toMatch(/^msg_[a-f0-9]{24}$/);
    expect(message.threadId).toMatch(/^thr_[a-f0-9]{24}$/);
    expect(message.internetMessageId).toBe(`<${submission.id}@agents.test>`);
    // Outbound messages list their attachments (none here) and their Cc recipients (none) as inbound ones do.
    expect(message.attachments).toEqual([]);
    expect(message.cc).toEqual([]);
    expect(message.inboundSecurity).toBeUndefined();
    expect(submission).toMatchObject({
      from: { email: inbox.address, name: "Agent Smith" },
      recipients: [{ email: "alice@example.com", status: "pending", response: null }],
      subject: "Hello",
      metadata: { ticket: "T-1", priority: 2 },
      status: "pending",
      queueId: null,
      response: null,
      failureCode: null,
    });

    const thread = await tenant.request("GET", `/v1/threads/${message.threadId}`);
    expect(thread.status).toBe(200);
    expect(thread.body).toMatchObject({ subject: "Hello", messageCount: 1, participants: [inbox.address, "alice@example.com"] });
    expect(thread.body.messages.map((m: { id: string }) => m.id)).toEqual([message.id]);

    const read = await tenant.request("GET", `/v1/submissions/${submission.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: submission.id, status: "pending" });

    // The stored bytes are what every delivery attempt sends: one Message-ID, the headers as given.
    const row = await app.db.fork().findOneOrFail(Submission, submission.id, { populate: ["mime"] });
    const mime = Buffer.from(row.mime).toString("utf8");
    expect(mime).toContain(`Message-ID: ${message.internetMessageId}`);
    expect(mime).toMatch(/^To: Alice <alice@example\.com>$/m);
    expect(mime).toMatch(/^Reply-To: desk@example\.com$/m);

    // No worker runs: the submission waits, pending, and no workflow was started by the answer.
    expect((await tenant.request("GET", `/v1/submissions/${submission.id}`)).body.status).toBe("pending");
    expect(await app.temporal.workflow.getHandle(deliveryWorkflowId(submission.id)).describe().catch(() => undefined)).toBeUndefined();
    // A worker's delivery queue claims it (queued) and starts its workflow, findable by its business key. The
    // announcement went out before any worker listened; a retry of the send announces a pending submission again.
    const worker = await app.startWorker();
    try {
      expect((await send(tenant, inbox.id, body, k)).body.replayed).toBe(true);
      const workflow = await eventually(() => app.temporal.workflow.getHandle(deliveryWorkflowId(submission.id)).describe().catch(() => undefined));
      expect(workflow.type).toBe("delivery");
      expect((await tenant.request("GET", `/v1/submissions/${submission.id}`)).body.queueId).toMatch(/^[0-9A-F]{32}$/);
    } finally {
      await worker.stop();
    }
  });

  test("refuses recipients that are not {email, name?} objects or not one plain address", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const bad: unknown[] = [
      ["alice@example.com"],
      [{ email: "Alice <alice@example.com>" }],
      [{ email: "alice@example.com (comment)" }],
      [{ email: "group: alice@example.com;" }],
      [{ email: '"bob@evil.test"@example.com' }],
      [{ email: "alice@example.com\r\nBcc: eve@evil.test" }],
      [{ email: "alice@example.com", name: "Alice\r\nBcc: eve@evil.test" }],
      [{ email: "alice@example.com,eve@evil.test" }],
      [{ email: "alice@[127.0.0.1]" }],
      [{ email: "alice@example.com" }, { email: "ALICE@example.com" }],
      [],
    ];
    for (const to of bad) {
      const res = await send(tenant, inbox.id, { ...basic, to });
      expect(res.status, JSON.stringify(to)).toBe(400);
    }
    expect((await send(tenant, inbox.id, { ...basic, subject: "Hi\r\nBcc: eve@evil.test" })).status).toBe(400);
    expect((await send(tenant, inbox.id, { to: basic.to, subject: "no body" })).status).toBe(400);
    expect((await send(tenant, inbox.id, { ...basic, metadata: { "bad key": 1 } })).status).toBe(400);
    expect(await app.db.fork().count(Submission, { organization: tenant.organizationId })).toBe(0);
  });

  test("requires a well-formed idempotency-key header", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    for (const k of [null, "short", "has space in it", "x".repeat(201)]) {
      const res = await send(tenant, inbox.id, basic, k);
      expect(res.status, String(k)).toBe(400);
    }
  });
});

describe("idempotency", () => {
  test("an exact retry replays the original result; different input is a 409; nothing new starts", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const k = key();
    const first = await send(tenant, inbox.id, basic, k);
    expect(first.status).toBe(202);
    // Same input in another key order and address case: the same logical request.
    const retry = await send(tenant, inbox.id, { text: "Hi Alice", subject: "Hello", to: [{ name: "Alice", email: "alice@example.com" }] }, k);
    expect(retry.status).toBe(202);
    expect(retry.body.replayed).toBe(true);
    expect(retry.body.message.id).toBe(first.body.message.id);
    expect(retry.body.submission.id).toBe(first.body.submission.id);

    const conflict = await send(tenant, inbox.id, { ...basic, text: "something else" }, k);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toBe("idempotency_key_conflict");
    expect(await app.db.fork().count(Message, { organization: tenant.organizationId })).toBe(1);

    // Keys are per route: the same key on the reply route is a different claim.
    const other = await send(tenant, inbox.id, basic, key());
    expect(other.body.message.id).not.toBe(first.body.message.id);
  });

  test("concurrent identical requests create exactly one message, one submission and one workflow", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const k = key();
    const worker = await app.startWorker();
    const results = await Promise.all(Array.from({ length: 12 }, () => send(tenant, inbox.id, basic, k)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 202).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 202 || s === 409)).toBe(true);
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.error).toBe("idempotency_request_in_progress");
    const fresh = results.filter((r) => r.status === 202 && !r.body.replayed);
    expect(fresh).toHaveLength(1);
    const em = app.db.fork();
    expect(await em.count(Message, { organization: tenant.organizationId })).toBe(1);
    expect(await em.count(Submission, { organization: tenant.organizationId })).toBe(1);
    const ids = new Set(results.filter((r) => r.status === 202).map((r) => r.body.submission.id));
    expect(ids.size).toBe(1);
    const handle = app.temporal.workflow.getHandle(deliveryWorkflowId([...ids][0]));
    await eventually(() => handle.describe().catch(() => undefined)).finally(() => worker.stop());
    // Runs of that id, open or closed (visibility lags a little behind the start).
    const runs = await eventually(async () => {
      let n = 0;
      for await (const _ of app.temporal.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) n++;
      return n > 0 ? n : undefined;
    });
    expect(runs).toBe(1);
  });

  test("a retry after the message was deleted is 410 idempotency_result_expired", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const k = key();
    const first = await send(tenant, inbox.id, basic, k);
    expect((await tenant.request("DELETE", `/v1/messages/${first.body.message.id}`)).status).toBe(204);
    const retry = await send(tenant, inbox.id, basic, k);
    expect(retry.status).toBe(410);
    expect(retry.body.error).toBe("idempotency_result_expired");
  });

  test("a reply retried after its thread's only message was deleted is 410 as well", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const { threadId, messageId } = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: inbox.id });
    const k = key();
    const reply = () => tenant.request("POST", `/v1/threads/${threadId}/replies`, { body: { targetMessageId: messageId, text: "ok" }, headers: { "idempotency-key": k } });
    const first = await reply();
    expect(first.status).toBe(202);
    expect((await tenant.request("DELETE", `/v1/messages/${first.body.message.id}`)).status).toBe(204);
    expect((await tenant.request("DELETE", `/v1/messages/${messageId}`)).status).toBe(204);
    const retry = await reply();
    expect([retry.status, retry.body.error]).toEqual([410, "idempotency_result_expired"]);
  });

  test("deleting the inbox purges its submissions, and a retry is then 410 rather than a second send", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const k = key();
    const first = await send(tenant, inbox.id, basic, k);
    expect(first.status).toBe(202);
    const worker = await app.startWorker();
    try {
      expect((await tenant.request("DELETE", `/v1/inboxes/${inbox.id}`)).status).toBe(204);
      await eventually(async () => ((await app.db.fork().count(Submission, { inboxId: inbox.id })) === 0 ? true : undefined));
      expect(await app.db.fork().count(SubmissionRecipient, { submissionId: first.body.submission.id })).toBe(0);
    } finally {
      await worker.stop();
    }
    const retry = await send(tenant, inbox.id, basic, k);
    expect([retry.status, retry.body.error]).toEqual([410, "idempotency_result_expired"]);
    // A key never used for this inbox is the plain 404 of a missing inbox.
    expect((await send(tenant, inbox.id, basic)).status).toBe(404);
    expect((await tenant.request("GET", `/v1/submissions/${first.body.submission.id}`)).status).toBe(404);
  });
});

describe("sending policy", () => {
  test("scope, inbox restriction and send mode", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const other = await inboxOf(tenant);
    const reader = await tenant.issueKey({ scopes: ["mailbox:read"] });
    const res = await tenant.request("POST", `/v1/inboxes/${inbox.id}/messages`, {
      body: basic,
      headers: { "x-api-key": reader.key, "idempotency-key": key() },
    });
    expect(res.status).toBe(403);

    const restricted = await tenant.issueKey({ scopes: ["mailbox:send"], inboxIds: [inbox.id] });
    const hidden = await tenant.request("POST", `/v1/inboxes/${other.id}/messages`, {
      body: basic,
      headers: { "x-api-key": restricted.key, "idempotency-key": key() },
    });
    expect(hidden.status).toBe(404);

    const replyOnly = await tenant.issueKey({ scopes: ["mailbox:send"], sendMode: "reply_only" });
    const refused = await tenant.request("POST", `/v1/inboxes/${inbox.id}/messages`, {
      body: basic,
      headers: { "x-api-key": replyOnly.key, "idempotency-key": key() },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe("send_mode_reply_only");
    const { threadId, messageId } = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: inbox.id });
    const reply = await tenant.request("POST", `/v1/threads/${threadId}/replies`, {
      body: { targetMessageId: messageId, text: "thanks" },
      headers: { "x-api-key": replyOnly.key, "idempotency-key": key() },
    });
    expect(reply.status).toBe(202);
  });

  test("allowed recipient domains, recipients per message and content size", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const limited = await tenant.issueKey({ scopes: ["mailbox:send"], allowedRecipientDomains: ["example.com"] });
    const outside = await tenant.request("POST", `/v1/inboxes/${inbox.id}/messages`, {
      body: { ...basic, to: [{ email: "a@example.com" }, { email: "b@elsewhere.test" }] },
      headers: { "x-api-key": limited.key, "idempotency-key": key() },
    });
    expect(outside.status).toBe(403);
    expect(outside.body.error).toBe("recipient_domain_not_allowed");
    expect(outside.body.message).toContain("b@elsewhere.test");
    const inside = await tenant.request("POST", `/v1/inboxes/${inbox.id}/messages`, {
      body: { ...basic, to: [{ email: "a@sub.example.com" }] },
      headers: { "x-api-key": limited.key, "idempotency-key": key() },
    });
    expect(inside.status).toBe(202);

    const six = Array.from({ length: 6 }, (_, i) => ({ email: `r${i}@example.com` }));
    const tooMany = await send(tenant, inbox.id, { ...basic, to: six });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toBe("too_many_recipients");

    const big = await send(tenant, inbox.id, { ...basic, text: "x".repeat(5000) });
    expect(big.status).toBe(413);
    expect(big.body.error).toBe("message_too_large");
  });

  test("suppressed recipients are refused by name", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const em = app.db.fork();
    em.create(Suppression, {
      id: crypto.randomUUID(),
      organization: tenant.organizationId,
      email: "gone@example.com",
      reason: "hard_bounce",
      detail: "550 5.1.1 no such user",
      createdAt: new Date(),
    });
    await em.flush();
    const res = await send(tenant, inbox.id, { ...basic, to: [{ email: "ok@example.com" }, { email: "Gone@Example.com" }] });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("recipient_suppressed");
    expect(res.body.message).toContain("gone@example.com");
  });

  test("the organization's send limits answer 429 with Retry-After, and a refused send does not count", async () => {
    const tenant = await app.createTenant({ messagesPerMinute: 2, recipientsPerDay: 3 });
    const inbox = await inboxOf(tenant);
    expect((await send(tenant, inbox.id, basic)).status).toBe(202);
    const overRecipients = await send(tenant, inbox.id, { ...basic, to: [{ email: "a@example.com" }, { email: "b@example.com" }, { email: "c@example.com" }] });
    expect(overRecipients.status).toBe(429);
    expect(overRecipients.body.error).toBe("send_limit_exceeded");
    expect(Number(overRecipients.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await send(tenant, inbox.id, basic)).status).toBe(202);
    const overMinute = await send(tenant, inbox.id, basic);
    expect(overMinute.status).toBe(429);
    const retryAfter = Number(overMinute.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await app.db.fork().count(Submission, { organization: tenant.organizationId })).toBe(2);
  });
});

describe("reply", () => {
  test("needs targetMessageId, answers Reply-To (else From) of an inbound target, and threads the reply", async () => {
    const tenant = await app.createTenant();
    const inbox = await inboxOf(tenant);
    const first = await storeInbound(app.db, {
      organizationId: tenant.organizationId,
      inboxId: inbox.id,
      subject: "Question",
      from: "customer@example.net",
      replyTo: { email: "Support-Desk@Example.net", name: "Desk" },
    });
    const missing = await tenant.request("POST", `/v1/threads/${first.threadId}/replies`, { body: { text: "hi" }, headers: { "idempotency-key": key() } });
    expect(missing.status).toBe(400);

    const res = await tenant.request("POST", `/v1/threads/${first.threadId}/replies`, {
      body: { targetMessageId: first.messageId, text: "Answer" },
      headers: { "idempotency-key": key() },
    });
    expect(res.status).toBe(202);
    const target = await app.db.fork().findOneOrFail(Message, first.messageId);
    expect(res.body.message).toMatchObject({
      threadId: first.threadId,
      direction: "outbound",
      subject: "Re: Question",
      to: [{ email: "support-desk@example.net", name: "Desk" }],
      inReplyTo: target.internetMessageId,
      references: [target.internetMessageId],
    });
    // Replying to the reply (an outbound target) goes to its To again, and keeps one "Re: ".
    const again = await tenant.request("POST", `/v1/threads/${first.threadId}/replies`, {
      body: { targetMessageId: res.body.message.id, text: "One more thing" },
      headers: { "idempotency-key": key() },
    });
    expect(again.status).toBe(202);
    expect(again.body.message).toMatchObject({
      subject: "Re: Question",
      to: [{ email: "support-desk@example.net" }],
      inReplyTo: res.body.message.internetMessageId,
      references: [target.internetMessageId, res.body.message.internetMessageId],
    });
    const thread = await tenant.request("GET", `/v1/threads/${first.threadId}`);
    expect(thread.body.messageCount).toBe(3);
    expect(thread.body.messages[0].id).toBe(again.body.message.id);

    const noReplyTo = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: inbox.id, from: "plain@example.net" });
    const toFrom = await tenant.request("POST", `/v1/threads/${noReplyTo.threadId}/replies`, {
      body: { targetMessageId: noReplyTo.messageId, html: "<p>ok</p>" },
      headers: { "idempotency-key": key() },
    });
    expect(toFrom.status).toBe(202);
    expect(toFrom.body.message.to).toEqual([{ email: "plain@example.net", name: "Sender" }]);

    // A target from another thread is not this thread's message.
    const elsewhere = await tenant.request("POST", `/v1/threads/${first.threadId}/replies`, {
      body: { targetMessageId: noReplyTo.messageId, text: "x" },
      headers: { "idempotency-key": key() },
    });
    expect(elsewhere.status).toBe(404);
  });
});

describe("/v1/send", () => {
  test("needs delivery:send and a verified customer domain of the organization", async () => {
    const tenant = await app.createTenant();
    const body = { from: { email: "news@unverified.example" }, to: [{ email: "a@example.com" }], subject: "Hi", text: "Hello" };
    const unverified = await tenant.request("POST", "/v1/send", { body, headers: { "idempotency-key": key() } });
    expect(unverified.status).toBe(403);
    expect(unverified.body.error).toBe("domain_not_verified");
    const managed = await tenant.request("POST", "/v1/send", {
      body: { ...body, from: { email: "someone@agents.test" } },
      headers: { "idempotency-key": key() },
    });
    expect(managed.status).toBe(403);
    const mailboxOnly = await tenant.issueKey({ scopes: ["mailbox:send"] });
    const noScope = await tenant.request("POST", "/v1/send", { body, headers: { "x-api-key": mailboxOnly.key, "idempotency-key": key() } });
    expect(noScope.status).toBe(403);
    const bare = await tenant.request("POST", "/v1/send", { body: { ...body, to: ["a@example.com"] }, headers: { "idempotency-key": key() } });
    expect(bare.status).toBe(400);
  });
});

describe("tenancy", () => {
  test("another organization's inbox, thread and submission are 404 on every send route", async () => {
    const owner = await app.createTenant();
    const stranger = await app.createTenant();
    const inbox = await inboxOf(owner);
    const sent = await send(owner, inbox.id, basic);
    expect(sent.status).toBe(202);
    expect((await send(stranger, inbox.id, basic)).status).toBe(404);
    const reply = await stranger.request("POST", `/v1/threads/${sent.body.message.threadId}/replies`, {
      body: { targetMessageId: sent.body.message.id, text: "x" },
      headers: { "idempotency-key": key() },
    });
    expect(reply.status).toBe(404);
    expect((await stranger.request("GET", `/v1/submissions/${sent.body.submission.id}`)).status).toBe(404);
    // The same idempotency key in another organization is another claim.
    expect(await app.db.fork().count(SubmissionRecipient, { organization: stranger.organizationId })).toBe(0);
  });
});

describe("reading a submission", () => {
  test("its status and its recipients' states come from one snapshot, however the delivery's writes interleave", async () => {
    const tenant = await app.createTenant({ restrictions: { requestsPerMinute: 1_000_000 } });
    const inbox = await inboxOf(tenant);
    const sent = await send(tenant, inbox.id, { ...basic, to: [{ email: "a@example.net" }, { email: "b@example.net" }] });
    expect(sent.status).toBe(202);
    const id: string = sent.body.submission.id;
    // The delivery writes a submission's aggregate and its recipients' states in one transaction, as this writer does,
    // flipping between two states that each agree with themselves (no worker runs in this file to write others).
    let done = false;
    const writer = (async () => {
      for (let i = 0; i < 2_000 && !done; i++) {
        const status = i % 2 === 0 ? "delivered" : "queued";
        await app.db.sql.transaction(async (tx) => {
          await tx.query("update submission_recipients set status = $1 where submission_id = $2", [status, id]);
          await tx.query("update submissions set status = $1 where id = $2", [status, id]);
        });
      }
    })();
    const seen: string[] = [];
    try {
      for (let i = 0; i < 300; i++) {
        const [one, list] = await Promise.all([tenant.request("GET", `/v1/submissions/${id}`), tenant.request("GET", "/v1/submissions?limit=5")]);
        expect([one.status, list.status]).toEqual([200, 200]);
        for (const s of [one.body, list.body.submissions.find((x: { id: string }) => x.id === id)]) {
          const recipients = new Set(s.recipients.map((r: { status: string }) => r.status));
          seen.push(`${s.status}:${[...recipients].join(",")}`);
        }
      }
    } finally {
      done = true;
      await writer;
    }
    // Before the writer's first flip the submission is still as sent (pending, both recipients pending).
    expect([...new Set(seen)].filter((state) => !["pending:pending", "delivered:delivered", "queued:queued"].includes(state))).toEqual([]);
    expect(seen).toContain("delivered:delivered");
  }, 120_000);
});
