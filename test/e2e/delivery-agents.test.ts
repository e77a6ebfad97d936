// Agents mail agents: a message sent through the API to a managed-domain inbox of another organization goes out
// through the same SMTP path (no SMTP_ROUTES: the managed domain's default route is our own SMTP role) and arrives
// in that inbox, with the same Message-ID; the sender's submission and mailbox message show it delivered.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { Message } from "../../src/db/entities/index.js";
import { findFreePort } from "../../src/runtime/free-port.js";
import { eventually, startTestApp, uniqueName, type TestApp, type Tenant } from "../support/harness.js";

let app: TestApp;

beforeAll(async () => {
  // The worker's route to the managed domain is BIND_HOST:SMTP_PORT, so the smtp role needs a known port.
  app = await startTestApp({ SMTP_PORT: String(await findFreePort()) });
  await app.startSmtp();
  await app.startWorker();
});
afterAll(async () => {
  await app?.stop();
});

async function inboxOf(tenant: Tenant): Promise<{ id: string; address: string }> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("agent"), displayName: "Agent" } });
  expect(res.status).toBe(201);
  return res.body;
}

test("a message to another organization's managed inbox arrives there through our own SMTP", async () => {
  const [alice, bob] = await Promise.all([app.createTenant(), app.createTenant()]);
  const [from, to] = await Promise.all([inboxOf(alice), inboxOf(bob)]);

  const sent = await alice.request("POST", `/v1/inboxes/${from.id}/messages`, {
    body: { to: [{ email: to.address, name: "Bob" }], subject: "Hello agent", text: "Shall we sync at noon?" },
    headers: { "idempotency-key": randomBytes(8).toString("hex") },
  });
  expect(sent.status).toBe(202);
  const submissionId: string = sent.body.submission.id;

  const submission = await eventually(async () => {
    const res = await alice.request("GET", `/v1/submissions/${submissionId}`);
    return res.body.status === "delivered" ? res.body : undefined;
  });
  expect(submission.queueId).toMatch(/^[0-9A-F]{32}$/);
  expect(submission.recipients).toEqual([expect.objectContaining({ email: to.address, status: "delivered", response: expect.stringMatching(/^250 2\.0\.0 Ok: queued as /) })]);

  const received = await eventually(async () => (await app.db.fork().findOne(Message, { inboxId: to.id })) ?? undefined);
  expect(received).toMatchObject({
    organization: expect.objectContaining({ id: bob.organizationId }),
    direction: "inbound",
    subject: "Hello agent",
    internetMessageId: sent.body.message.internetMessageId,
    text: expect.stringContaining("Shall we sync at noon?"),
  });
  expect(received.from).toMatchObject({ email: from.address });

  // The sender's copy in its mailbox reflects the delivery.
  const thread = await alice.request("GET", `/v1/threads/${sent.body.message.threadId}`);
  expect(thread.body.messages[0].delivery).toEqual({ submissionId, status: "delivered", failureCode: null });
});
