// One message's whole way in, with every part real and wired as the service wires it: an SMTP session, the durable
// receive, processing, the webhook outbox delivering a signed event to an HTTPS receiver, the attachment scan
// workflow, and the API reading the message and downloading the attachment once it is clean.
import { createTransport } from "nodemailer";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { startHttpsReceiver, verifySignature, type HttpsReceiver } from "../support/https-receiver.js";

let receiver: HttpsReceiver;
let app: TestApp;
let smtp: SmtpRole;
let worker: { stop(): Promise<void> };

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  app = await startTestApp({ WEBHOOK_ALLOW_HOSTS: receiver.host });
  worker = await app.startWorker();
  smtp = await app.startSmtp();
});
afterAll(async () => {
  await worker?.stop();
  await app?.stop();
  await receiver?.close();
});

test("mail sent over SMTP is announced by a signed webhook, readable through the API, and its clean attachment downloads", async () => {
  const tenant = await app.createTenant();
  const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("flow"), displayName: "Flow" } })).body;
  const endpoint = receiver.endpoint();
  const hook = await tenant.request("POST", "/v1/webhooks", {
    body: { url: endpoint.url, events: ["message.received"] },
    headers: { "idempotency-key": uniqueName("flow-hook") },
  });
  expect(hook.status).toBe(201);

  await createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, tls: { rejectUnauthorized: false } }).sendMail({
    from: "Customer <customer@example.org>",
    to: inbox.address,
    subject: "Invoice",
    text: "Please find the invoice attached.",
    attachments: [{ filename: "invoice.txt", content: "Total: 42 EUR" }],
  });

  const [delivery] = await endpoint.waitFor(1, 20_000);
  expect(verifySignature(hook.body.signingSecret, delivery!)).toBe(true);
  const event = JSON.parse(delivery!.body) as { id: string; type: string; data: { messageId: string; inboxId: string; threadId: string } };
  expect(event.type).toBe("message.received");
  expect(event.data.inboxId).toBe(inbox.id);
  expect(Object.keys(event.data).sort()).toEqual(["inboxId", "messageId", "threadId"]);

  const thread = await tenant.request("GET", `/v1/threads/${event.data.threadId}`);
  expect(thread.status).toBe(200);
  const message = thread.body.messages.find((m: { id: string }) => m.id === event.data.messageId);
  expect(message).toMatchObject({
    direction: "inbound",
    subject: "Invoice",
    from: { email: "customer@example.org", name: "Customer" },
    delivery: { submissionId: null, status: "received", failureCode: null },
  });
  expect(message.attachments).toHaveLength(1);

  // The built-in scanner (no clamd configured) finds the text clean; then, and only then, the bytes download.
  const attachmentId: string = message.attachments[0].id;
  await eventually(async () => {
    const res = await tenant.request("GET", `/v1/messages/${event.data.messageId}/attachments/${attachmentId}`);
    return res.status === 200 ? res : undefined;
  }).then((res) => expect(res.body).toBe("Total: 42 EUR"));
  // The message's state follows its attachments' verdicts in the workflow's next step.
  const after = await eventually(async () => {
    const res = await tenant.request("GET", `/v1/threads/${event.data.threadId}`);
    return res.body.messages[0].inboundSecurity.attachments === "unscanned" ? undefined : res;
  });
  expect(after.body.messages[0].inboundSecurity.attachments).toBe("clean");
});
