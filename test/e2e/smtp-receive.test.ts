// Receiving mail end to end: real SMTP sessions from nodemailer and from Python's smtplib into the smtp role,
// real PostgreSQL, and the stored messages read back from the database and through the API.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createTransport } from "nodemailer";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Attachment, InboundRawMessage, Message, Thread } from "../../src/db/entities/index.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { startHttpsReceiver, type HttpsReceiver } from "../support/https-receiver.js";
import { eventsOf, scanStarted, webhookEndpoint } from "../support/inbound-ports.js";
import { sendRaw } from "../support/smtp-client.js";

const run = promisify(execFile);

let receiver: HttpsReceiver;
let dns: TestDnsServer;
let app: TestApp;
let smtp: SmtpRole;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  // A DNS server of the test's own, publishing nothing: every sender here is unauthenticated (none), whatever the
  // machine's resolvers would say of example.org.
  dns = await startDnsServer();
  app = await startTestApp({ WEBHOOK_ALLOW_HOSTS: receiver.host, DNS_SERVERS: dns.serverList });
  smtp = await app.startSmtp();
});
afterAll(async () => {
  await app?.stop();
  await receiver?.close();
  await dns?.stop();
});

async function createInbox(tenant: Tenant): Promise<{ id: string; address: string }> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("agent"), displayName: "Agent" } });
  expect(res.status).toBe(201);
  return res.body;
}

/** The inbound messages stored in an inbox, oldest first, once there are `count`. */
function storedMessages(inboxId: string, count = 1) {
  return eventually(async () => {
    const rows = await app.db.fork().find(Message, { inboxId }, { orderBy: { createdAt: "asc", id: "asc" } });
    return rows.length >= count ? rows : undefined;
  });
}

function nodemailerTransport() {
  return createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, requireTLS: true, tls: { rejectUnauthorized: false } });
}

describe("receiving", () => {
  test("stores a message sent by nodemailer over STARTTLS with every field of the spec's Message", async () => {
    const tenant = await app.createTenant();
    const inbox = await createInbox(tenant);
    const endpoint = receiver.endpoint();
    const hook = await webhookEndpoint(tenant, endpoint.url);
    const info = await nodemailerTransport().sendMail({
      envelope: { from: "alice@example.org", to: [inbox.address] },
      from: { name: "Alice Example", address: "alice@example.org" },
      to: [{ name: "The Agent", address: inbox.address }],
      cc: "bob@example.org",
      replyTo: "replies@example.org",
      subject: "Quarterly numbers",
      text: "Hello agent,\nthe numbers are attached.",
      html: "<p>Hello agent,<br>the numbers are attached.</p>",
      messageId: "<q1-2026@example.org>",
      inReplyTo: "<q0@example.org>",
      references: ["<q-1@example.org>", "<q0@example.org>"],
    });
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as [0-9a-f-]{36}$/);

    const [message] = await storedMessages(inbox.id);
    const res = await tenant.request("GET", `/v1/threads/${message!.threadId}`);
    expect(res.status).toBe(200);
    expect(res.body.messages).toHaveLength(1);
    expect(res.body.messages[0]).toEqual({
      id: message!.id,
      inboxId: inbox.id,
      threadId: message!.threadId,
      direction: "inbound",
      internetMessageId: "<q1-2026@example.org>",
      inReplyTo: "<q0@example.org>",
      references: ["<q-1@example.org>", "<q0@example.org>"],
      from: { email: "alice@example.org", name: "Alice Example" },
      to: [{ email: inbox.address, name: "The Agent" }],
      cc: [{ email: "bob@example.org" }],
      subject: "Quarterly numbers",
      text: "Hello agent,\nthe numbers are attached.",
      html: "<p>Hello agent,<br>the numbers are attached.</p>",
      replyTo: { email: "replies@example.org" },
      metadata: {},
      delivery: { submissionId: null, status: "received", failureCode: null },
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      updatedAt: expect.stringMatching(/Z$/),
      attachments: [],
      inboundSecurity: {
        trust: "untrusted",
        smtp: {
          remoteIp: "127.0.0.1",
          helo: expect.any(String),
          tls: { encrypted: true, protocol: "TLSv1.3", cipher: expect.stringMatching(/^TLS_/) },
        },
        authentication: {
          spf: "none",
          dkim: "none",
          dmarc: "none",
          arc: "none",
          fromDomain: "example.org",
          senderAuthenticated: false,
          dkimDomains: [],
          dmarcPolicy: null,
        },
        attachments: expect.any(String),
        replyToDiverges: false,
        senderRule: "none",
      },
      extracted: {
        replyText: "Hello agent,\nthe numbers are attached.",
        codes: [],
        links: [],
        safeText: "Hello agent,\nthe numbers are attached.",
        warnings: [
          { code: "sender_unauthenticated", detail: "dmarc", evidence: "alice@example.org", part: "from", offset: null, hidden: false, domain: null, imitates: null },
        ],
        risk: "review",
      },
    });
    expect(res.body).toMatchObject({
      subject: "Quarterly numbers",
      participants: ["alice@example.org", inbox.address, "bob@example.org"],
      messageCount: 1,
    });
    // Processed completely: the raw message is gone, the event is written, and its first attempt went out from the
    // smtp process at once.
    expect(await app.db.fork().count(InboundRawMessage, { id: message!.rawId! })).toBe(0);
    expect(await eventsOf(app, message!.id)).toEqual([
      {
        endpointId: hook.id,
        eventType: "message.received",
        data: { messageId: message!.id, inboxId: inbox.id, threadId: message!.threadId },
      },
    ]);
    const [request] = await endpoint.waitFor(1);
    expect(JSON.parse(request!.body).data.messageId).toBe(message!.id);
  });

  test("receives from Python's smtplib, a second independent client, in cleartext and over STARTTLS", async () => {
    const tenant = await app.createTenant();
    const inbox = await createInbox(tenant);
    const script = `
import smtplib, ssl, sys
port, rcpt = int(sys.argv[1]), sys.argv[2]
for secure in (False, True):
    with smtplib.SMTP("127.0.0.1", port, local_hostname="py.client.example", timeout=20) as s:
        if secure:
            s.starttls(context=ssl._create_unverified_context())
        msg = "From: Py <py@example.net>\\r\\nTo: %s\\r\\nSubject: secure=%s\\r\\nMessage-ID: <py-%s@example.net>\\r\\n\\r\\nfrom python\\r\\n" % (rcpt, secure, secure)
        s.sendmail("py@example.net", [rcpt], msg)
`;
    await run("python3", ["-c", script, String(smtp.port), inbox.address], { timeout: 30_000 });
    const messages = await storedMessages(inbox.id, 2);
    const bySubject = Object.fromEntries(messages.map((m) => [m.subject, m]));
    expect(bySubject["secure=False"]!.inboundSecurity).toEqual({
      remoteIp: "127.0.0.1",
      helo: "py.client.example",
      tls: { encrypted: false, protocol: null, cipher: null },
      authentication: expect.objectContaining({ spf: "none", dmarc: "none", fromDomain: "example.net", senderAuthenticated: false }),
      senderRule: "none",
    });
    expect(bySubject["secure=True"]!.inboundSecurity).toMatchObject({
      helo: "py.client.example",
      tls: { encrypted: true, protocol: expect.stringMatching(/^TLSv1\.[23]$/) },
    });
    expect(bySubject["secure=True"]!).toMatchObject({ from: { email: "py@example.net", name: "Py" }, text: "from python\n", html: null });
  });

  test("gives each inbox of one transaction its own message, thread and organization", async () => {
    const [first, second] = [await app.createTenant(), await app.createTenant()];
    const a = await createInbox(first!);
    const b = await createInbox(second!);
    const replies = await sendRaw(smtp.port, {
      from: "sender@example.org",
      to: [a.address, b.address],
      data: `From: sender@example.org\r\nTo: ${a.address}, ${b.address}\r\nSubject: to both\r\n\r\nhi both\r\n`,
    });
    expect(replies.message?.code).toBe(250);
    const [inA] = await storedMessages(a.id);
    const [inB] = await storedMessages(b.id);
    expect(inA!.organization.id).toBe(first!.organizationId);
    expect(inB!.organization.id).toBe(second!.organizationId);
    expect(inA!.id).not.toBe(inB!.id);
    expect(inA!.threadId).not.toBe(inB!.threadId);
    expect(inA!.rawId).toBe(inB!.rawId);
    // Without a Message-ID the server supplies one, the same for every copy of the message.
    expect(inA!.internetMessageId).toBe(inB!.internetMessageId);
    expect(inA!.internetMessageId).toBe(`<${inA!.rawId}@${app.config.smtp.hostname}>`);
    const threadB = await app.db.fork().findOneOrFail(Thread, inB!.threadId);
    expect(threadB.organization.id).toBe(second!.organizationId);
  });

  test("routes by the envelope recipients and never by the To: header", async () => {
    const tenant = await app.createTenant();
    const named = await createInbox(tenant);
    const envelope = await createInbox(tenant);
    const replies = await sendRaw(smtp.port, {
      from: "sender@example.org",
      to: [envelope.address],
      data: `From: sender@example.org\r\nTo: ${named.address}\r\nSubject: bcc\r\n\r\nfor the envelope\r\n`,
    });
    expect(replies.message?.code).toBe(250);
    const [stored] = await storedMessages(envelope.id);
    expect(stored!.to).toEqual([{ email: named.address }]);
    expect(await app.db.fork().count(Message, { inboxId: named.id })).toBe(0);
  });

  test("stores attachments under generated ids with sanitised names, then starts their scan", async () => {
    const tenant = await app.createTenant();
    const inbox = await createInbox(tenant);
    await nodemailerTransport().sendMail({
      from: "files@example.org",
      to: inbox.address,
      subject: "files",
      text: "two files",
      attachments: [
        { filename: "../../report\u202Efdp.exe", content: Buffer.from("MZ not really"), contentType: "application/x-msdownload" },
        { filename: "notes.txt", content: "plain notes" },
      ],
    });
    const [message] = await storedMessages(inbox.id);
    const hex = message!.id.slice(4);
    const attachments = await app.db
      .fork()
      .find(Attachment, { messageId: message!.id }, { orderBy: { position: "asc" }, populate: ["content"] });
    expect(attachments.map((a) => [a.id, a.filename, a.contentType, a.size, a.scanState])).toEqual([
      [`att_${hex}_1`, "reportfdp.exe", "application/x-msdownload", 13, "unscanned"],
      [`att_${hex}_2`, "notes.txt", "text/plain", 11, "unscanned"],
    ]);
    expect(Buffer.from(attachments[1]!.content).toString()).toBe("plain notes");
    expect(message!.attachmentsScanState).toBe("unscanned");
    expect(await scanStarted(app, message!.id)).toEqual([{ messageId: message!.id, organizationId: tenant.organizationId, inboxId: inbox.id }]);
  });
});

describe("threading", () => {
  test("a reply naming an earlier message of the inbox joins its thread and keeps the summary current", async () => {
    const tenant = await app.createTenant();
    const inbox = await createInbox(tenant);
    const mailer = nodemailerTransport();
    await mailer.sendMail({ from: "Carol <carol@example.org>", to: inbox.address, subject: "Plan", text: "first", messageId: "<plan-1@example.org>" });
    const [first] = await storedMessages(inbox.id);
    await mailer.sendMail({
      from: "dave@example.org",
      to: inbox.address,
      cc: "Erin <ERIN@Example.org>",
      subject: "Re: Plan",
      text: "second",
      messageId: "<plan-2@example.org>",
      references: ["<unknown@elsewhere>", "<plan-1@example.org>"],
    });
    const [, second] = await storedMessages(inbox.id, 2);
    expect(second!.threadId).toBe(first!.threadId);
    const thread = await app.db.fork().findOneOrFail(Thread, first!.threadId);
    expect(thread).toMatchObject({
      subject: "Plan",
      participants: ["carol@example.org", inbox.address, "dave@example.org", "erin@example.org"],
      messageCount: 2,
      lastMessageAt: second!.createdAt,
    });
  });

  test("a message answering mail of another inbox starts a thread of its own", async () => {
    const tenant = await app.createTenant();
    const [one, other] = [await createInbox(tenant), await createInbox(tenant)];
    const mailer = nodemailerTransport();
    await mailer.sendMail({ from: "x@example.org", to: one.address, subject: "A", text: "a", messageId: "<isolated-1@example.org>" });
    const [original] = await storedMessages(one.id);
    await mailer.sendMail({ from: "x@example.org", to: other.address, subject: "Re: A", text: "b", inReplyTo: original!.internetMessageId });
    const [reply] = await storedMessages(other.id);
    expect(reply!.threadId).not.toBe(original!.threadId);
    expect(await app.db.fork().findOneOrFail(Thread, reply!.threadId)).toMatchObject({ subject: "Re: A", messageCount: 1 });
  });
});
