// Mail the way people write it, through the real service (API, PostgreSQL, Temporal worker, the run's clamd, an SMTP
// sink as the recipients' server, an HTTPS server of files): attachments given inline, by upload and by URL arrive as
// Python's email package reads them back, byte for byte and by name; Cc is in the headers and Bcc in no header nor in
// the stored message; each recipient has its own state; reply-all answers everyone; forward quotes or attaches the
// original and joins its thread.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { WorkflowNotFoundError } from "@temporalio/client";
import { EICAR } from "../../src/scanning/builtin.js";
import { deliveryWorkflowId } from "../../src/temporal/client.js";
import { verifiedDomain } from "../support/customer-domains.js";
import { attemptResults } from "../support/delivery-history.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { startHttpsFileServer, type HttpsFileServer } from "../support/https-file-server.js";
import { storeInbound } from "../support/mail-fixtures.js";
import { parseWithPython, type Part } from "../support/python-email.js";
import { startSmtpSink, type SmtpSink, type SinkTransaction } from "../support/smtp-sink.js";

let app: TestApp;
let sink: SmtpSink;
let files: HttpsFileServer;
let dns: TestDnsServer;
let tenant: Tenant;
let inbox: { id: string; address: string };

beforeAll(async () => {
  const clamd = inject("clamd");
  if ("failure" in clamd) throw new Error(`the test clamd did not start: ${clamd.failure}`);
  [sink, files, dns] = await Promise.all([startSmtpSink(), startHttpsFileServer(), startDnsServer()]);
  app = await startTestApp({
    SMTP_ROUTES: `*=127.0.0.1:${sink.port}`,
    DELIVERY_RETRY_INITIAL: "200ms",
    DELIVERY_RETRY_MAX: "400ms",
    CLAMD_ADDRESS: clamd.tcpAddress,
    WEBHOOK_ALLOW_HOSTS: files.host,
    DNS_SERVERS: dns.serverList,
    DNS_TIMEOUT_MS: "200",
  });
  await app.startWorker();
  tenant = await app.createTenant();
  inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("agent"), displayName: "Agent" } })).body;
});
afterAll(async () => {
  await app?.stop();
  await Promise.all([sink?.stop(), files?.close(), dns?.stop()]);
});

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const at = (local: string) => `${uniqueName(local)}@sink.test`;
const key = () => uniqueName("rich");

function post(path: string, body: unknown, idempotencyKey = key(), as: Tenant = tenant, headers: Record<string, string> = {}) {
  return as.request("POST", path, { body, headers: { "idempotency-key": idempotencyKey, ...headers } });
}

/** Polls the submission until `done` holds. */
function submissionWhen(id: string, done: (s: any) => boolean, as: Tenant = tenant): Promise<any> {
  return eventually(async () => {
    const res = await as.request("GET", `/v1/submissions/${id}`);
    return done(res.body) ? res.body : undefined;
  });
}

/** No history yet: the workflow is started once the first attempt is recorded. */
function notStartedYet(e: unknown): unknown[] {
  if (e instanceof WorkflowNotFoundError) return [];
  throw e;
}

/** The one transaction the sink got for a recipient. */
function copyFor(address: string): SinkTransaction {
  const copies = sink.copiesFor(address);
  expect(copies).toHaveLength(1);
  return copies[0]!;
}

/** The header block of raw bytes, unfolded. */
function headersOf(raw: Buffer): string {
  return raw.toString("latin1").split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, " ");
}

/** The leaves of a parsed tree (no multipart containers), in order. */
function leaves(part: Part): Part[] {
  return part.parts ? part.parts.flatMap(leaves) : [part];
}

describe("attachments, cc and bcc", () => {
  test("files inline, by upload and by URL arrive whole and named; Cc in the headers, Bcc in the envelope only; each recipient its own state", async () => {
    const pdf = randomBytes(40_000);
    const png = randomBytes(3_000);
    const csv = Buffer.from("id,amount\n1,42\n");
    const upload = await fetch(`${app.baseUrl}/v1/uploads?filename=${encodeURIComponent("Übersicht März.csv")}`, {
      method: "POST",
      headers: { "x-api-key": tenant.key, "content-type": "text/csv" },
      body: csv,
    }).then((r) => r.json() as Promise<{ id: string }>);
    const path = `/${uniqueName("files")}/terms.pdf`;
    const url = files.route(path, (_req, res) => res.writeHead(200, { "content-type": "application/pdf" }).end(pdf));
    const to = at("alice");
    const cc = at("reject-carol");
    const bcc = at("defer-dave");
    const sent = await post(`/v1/inboxes/${inbox.id}/messages`, {
      to: [{ email: to, name: "Alice" }],
      cc: [{ email: cc, name: "Carol" }],
      bcc: [{ email: bcc }],
      subject: "Your files",
      text: "See attached.",
      html: '<p>Our logo: <img src="cid:logo.1@agents.test"></p>',
      attachments: [
        { uploadId: upload.id },
        { url },
        { filename: "logo.png", contentType: "image/png", contentBase64: png.toString("base64"), contentId: "logo.1@agents.test" },
      ],
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const { message, submission } = sent.body;
    expect(submission.recipients.map((r: any) => [r.email, r.kind, r.status])).toEqual([
      [to, "to", "pending"],
      [cc, "cc", "pending"],
      [bcc, "bcc", "pending"],
    ]);
    expect(message.cc).toEqual([{ email: cc, name: "Carol" }]);
    expect(JSON.stringify(message)).not.toContain(bcc);
    expect(message.attachments.map((a: any) => [a.filename, a.contentType, a.size, a.scanState])).toEqual([
      ["Übersicht März.csv", "text/csv", csv.length, "clean"],
      ["terms.pdf", "application/pdf", pdf.length, "clean"],
      ["logo.png", "image/png", png.length, "clean"],
    ]);

    // Each recipient's own state: the peer accepts Alice, refuses Carol for good and defers Dave.
    const settled = await submissionWhen(submission.id, (s) => s.recipients[2].status === "deferred" && s.recipients[1].status === "bounced");
    expect(settled.recipients.map((r: any) => [r.kind, r.status])).toEqual([
      ["to", "delivered"],
      ["cc", "bounced"],
      ["bcc", "deferred"],
    ]);
    expect(settled.status).toBe("partially_delivered");
    // The delivery queue made the first attempt (DELIVERY_WORKFLOWS=deferred): its story is the submission's, each
    // recipient with the peer's reply; the workflow started for the deferral tells each retry's outcome.
    expect(settled.recipients.map((r: any) => r.response.slice(0, 9))).toEqual(["250 2.0.0", "550 5.1.1", "451 4.2.0"]);
    const retried = await eventually(async () => (await attemptResults(app.temporal, submission.id).catch(notStartedYet))[0]);
    expect(retried).toEqual({ remaining: 1, recipients: [{ email: bcc, status: "deferred", replyCode: 451, reply: expect.stringMatching(/^451 4\.2\.0 /) }] });
    const retries = await app.temporal.workflow.getHandle(deliveryWorkflowId(submission.id)).describe();
    expect(await retries.staticSummary()).toBe("Retries to 1 recipient domain after the delivery queue's first attempt");

    // One transaction: every recipient in the envelope; Bcc in no header and nowhere in the bytes.
    const copy = copyFor(to);
    expect(sink.rcpts.filter((r) => [to, cc, bcc].includes(r.address)).map((r) => r.address)).toEqual(expect.arrayContaining([to, cc, bcc]));
    expect(copy.raw.toString("latin1")).not.toContain(bcc);
    expect(headersOf(copy.raw)).not.toMatch(/^bcc:/im);
    const parsed = parseWithPython(copy.raw);
    expect(parsed.defects).toEqual([]);
    expect(parsed.to).toEqual([to]);
    expect(parsed.cc).toEqual([["Carol", cc]]);
    const parts = leaves(parsed.tree).filter((p) => p.filename !== null);
    expect(parts.map((p) => [p.filename, p.type, p.sha256])).toEqual([
      ["logo.png", "image/png", sha256(png)],
      ["Übersicht März.csv", "text/csv", sha256(csv)],
      ["terms.pdf", "application/pdf", sha256(pdf)],
    ]);
    expect(parts[0]).toMatchObject({ disposition: "inline", cid: "<logo.1@agents.test>" });

    // The stored message keeps no Bcc anywhere, and its files download through the sender's key.
    const thread = await tenant.request("GET", `/v1/threads/${message.threadId}`);
    expect(JSON.stringify(thread.body)).not.toContain(bcc);
    expect(thread.body.participants).toEqual([inbox.address, to, cc]);
    const download = await fetch(`${app.baseUrl}/v1/messages/${message.id}/attachments/${message.attachments[1].id}`, { headers: { "x-api-key": tenant.key } });
    expect(download.status).toBe(200);
    expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(pdf));
  });

  test("an exact retry answers the first result without fetching its URL again; the URL is part of what the key names", async () => {
    const path = `/${uniqueName("once")}/notes.txt`;
    const url = files.route(path, (_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("notes"));
    const k = key();
    const body = { to: [{ email: at("erin") }], subject: "Notes", text: "Attached.", attachments: [{ url }] };
    const first = await post(`/v1/inboxes/${inbox.id}/messages`, body, k);
    expect(first.status).toBe(202);
    const again = await post(`/v1/inboxes/${inbox.id}/messages`, body, k);
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ replayed: true, submission: { id: first.body.submission.id } });
    expect(again.body.message.attachments).toEqual(first.body.message.attachments);
    expect(files.hits(path)).toBe(1);
    const other = files.route(`${path}.2`, (_req, res) => res.writeHead(200).end("other"));
    const conflict = await post(`/v1/inboxes/${inbox.id}/messages`, { ...body, attachments: [{ url: other }] }, k);
    expect(conflict).toMatchObject({ status: 409, body: { error: "idempotency_key_conflict" } });
    expect(files.hits(`${path}.2`)).toBe(0);
  });

  test("an infected file is 422 attachment_infected, an unknown upload 404 upload_not_found: nothing stored or sent", async () => {
    const before = await app.db.sql.query<{ n: number }>("select count(*)::int as n from submissions where organization_id = $1", [tenant.organizationId]);
    const infected = await post(`/v1/inboxes/${inbox.id}/messages`, {
      to: [{ email: at("frank") }],
      subject: "Hi",
      text: "t",
      attachments: [{ filename: "eicar.com", contentBase64: EICAR.toString("base64") }],
    });
    expect(infected).toMatchObject({ status: 422, body: { error: "attachment_infected" } });
    expect(infected.body.message).toContain("attachments[0] (eicar.com)");
    const unknown = await post(`/v1/inboxes/${inbox.id}/messages`, { to: [{ email: at("frank") }], subject: "Hi", text: "t", attachments: [{ uploadId: `upl_${"0".repeat(24)}` }] });
    expect(unknown).toMatchObject({ status: 404, body: { error: "upload_not_found" } });
    const after = await app.db.sql.query<{ n: number }>("select count(*)::int as n from submissions where organization_id = $1", [tenant.organizationId]);
    expect(after).toEqual(before);
  });

  test("to, cc and bcc are one list for uniqueness and the recipient limit", async () => {
    const same = at("gina");
    const twice = await post(`/v1/inboxes/${inbox.id}/messages`, { to: [{ email: same }], bcc: [{ email: same.toUpperCase() }], subject: "s", text: "t" });
    expect(twice).toMatchObject({ status: 400, body: { error: "invalid_address" } });
    const many = Array.from({ length: app.config.platformLimits.recipientsPerMessage }, () => ({ email: at("many") }));
    const over = await post(`/v1/inboxes/${inbox.id}/messages`, { to: [{ email: at("hank") }], cc: many, subject: "s", text: "t" });
    expect(over).toMatchObject({ status: 400, body: { error: "too_many_recipients" } });
    const restricted = await tenant.issueKey({ scopes: ["mailbox:send"], allowedRecipientDomains: ["sink.test"] });
    const refused = await post(`/v1/inboxes/${inbox.id}/messages`, { to: [{ email: at("ivy") }], bcc: [{ email: "spy@elsewhere.example" }], subject: "s", text: "t" }, key(), tenant, {
      "x-api-key": restricted.key,
    });
    expect(refused).toMatchObject({ status: 403, body: { error: "recipient_domain_not_allowed" } });
  });

  test("/v1/send takes cc, bcc and attachments the same way, from a verified customer domain", async () => {
    const domain = await verifiedDomain(tenant, dns);
    const to = at("jack");
    const bcc = at("kate");
    const file = randomBytes(1_000);
    const sent = await post("/v1/send", {
      from: { email: `billing@${domain.domain}` },
      to: [{ email: to }],
      cc: [{ email: at("liam") }],
      bcc: [{ email: bcc }],
      subject: "Invoice",
      text: "Attached.",
      attachments: [{ filename: "invoice.bin", contentBase64: file.toString("base64") }],
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body.submission.recipients.map((r: any) => r.kind)).toEqual(["to", "cc", "bcc"]);
    await submissionWhen(sent.body.submission.id, (s) => s.status === "delivered");
    const copy = copyFor(to);
    expect(copy.to).toContain(bcc);
    expect(copy.raw.toString("latin1")).not.toContain(bcc);
    const parsed = parseWithPython(copy.raw);
    expect(leaves(parsed.tree).filter((p) => p.filename).map((p) => [p.filename, p.sha256])).toEqual([["invoice.bin", sha256(file)]]);
  });
});

describe("reply-all", () => {
  test("answers the target's Reply-To and every To and Cc but the inbox itself, each address once in any case; Cc stays Cc", async () => {
    const [bob, carol, dora] = [at("bob"), at("carol"), at("dora")];
    const inbound = await storeInbound(app.db, {
      organizationId: tenant.organizationId,
      inboxId: inbox.id,
      from: at("sender"),
      replyTo: { email: dora, name: "Dora" },
      to: [{ email: inbox.address.toUpperCase() }, { email: bob }],
      cc: [{ email: carol }, { email: bob.toUpperCase() }, { email: inbox.address }],
      subject: "Plans",
    });
    const extra = at("eve");
    const res = await post(`/v1/threads/${inbound.threadId}/replies`, { targetMessageId: inbound.messageId, replyAll: true, text: "Agreed.", cc: [{ email: extra }] });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.message.to.map((a: any) => a.email)).toEqual([dora, bob]);
    expect(res.body.message.cc.map((a: any) => a.email)).toEqual([carol, extra]);
    expect(res.body.submission.recipients.map((r: any) => [r.email, r.kind])).toEqual([
      [dora, "to"],
      [bob, "to"],
      [carol, "cc"],
      [extra, "cc"],
    ]);
    expect(res.body.message.subject).toBe("Re: Plans");
    await submissionWhen(res.body.submission.id, (s) => s.status === "delivered");
    const parsed = parseWithPython(copyFor(dora).raw);
    expect(parsed.to).toEqual([dora, bob]);
    expect(parsed.cc.map(([, a]) => a)).toEqual([carol, extra]);
    // Without replyAll the same target is answered at its Reply-To alone.
    const single = await post(`/v1/threads/${inbound.threadId}/replies`, { targetMessageId: inbound.messageId, text: "Only you." });
    expect(single.body.submission.recipients.map((r: any) => r.email)).toEqual([dora]);
  });
});

describe("forward", () => {
  test("inline: quotes the original under its header block with its clean attachments only, in the original's thread", async () => {
    const clean = randomBytes(2_000);
    const inbound = await storeInbound(app.db, {
      organizationId: tenant.organizationId,
      inboxId: inbox.id,
      from: "vendor@example.net",
      subject: "Quote",
      text: "Price: 42",
      attachments: [
        { filename: "quote.pdf", content: clean, scanState: "clean", contentType: "application/pdf" },
        { filename: "macro.docm", content: "suspicious", scanState: "infected" },
        // A type as a sender may declare it: untrusted, so it travels as application/octet-stream.
        { filename: "notes.txt", content: "notes", scanState: "clean", contentType: "text plain; x" },
      ],
    });
    const to = at("boss");
    const res = await post(`/v1/messages/${inbound.messageId}:forward`, { to: [{ email: to }], text: "FYI, see below." });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.message).toMatchObject({ threadId: inbound.threadId, subject: "Fwd: Quote", direction: "outbound" });
    expect(res.body.message.text).toMatch(/^FYI, see below\.\n\n---------- Forwarded message ---------\nFrom: Sender <vendor@example\.net>\nDate: .+\nSubject: Quote\nTo: agent@agents\.test\n\nPrice: 42$/);
    expect(res.body.message.attachments.map((a: any) => [a.filename, a.contentType])).toEqual([
      ["quote.pdf", "application/pdf"],
      ["notes.txt", "application/octet-stream"],
    ]);
    const thread = await tenant.request("GET", `/v1/threads/${inbound.threadId}`);
    expect(thread.body.messages.map((m: any) => m.id)).toContain(res.body.message.id);
    await submissionWhen(res.body.submission.id, (s) => s.status === "delivered");
    const parsed = parseWithPython(copyFor(to).raw);
    expect(parsed.headers.Subject).toBe("Fwd: Quote");
    expect(leaves(parsed.tree).filter((p) => p.filename).map((p) => [p.filename, p.sha256])).toEqual([
      ["quote.pdf", sha256(clean)],
      ["notes.txt", sha256(Buffer.from("notes"))],
    ]);
  });

  test("attachment: the original travels whole as message/rfc822; refused while any attachment of it is not clean", async () => {
    const file = randomBytes(1_500);
    const unscanned = await storeInbound(app.db, {
      organizationId: tenant.organizationId,
      inboxId: inbox.id,
      subject: "Pending scan",
      attachments: [{ filename: "a.bin", content: "x", scanState: "unscanned" }],
    });
    const refused = await post(`/v1/messages/${unscanned.messageId}:forward`, { to: [{ email: at("ops") }], mode: "attachment" });
    expect(refused).toMatchObject({ status: 422, body: { error: "attachment_not_clean" } });

    const inbound = await storeInbound(app.db, {
      organizationId: tenant.organizationId,
      inboxId: inbox.id,
      subject: "Contract",
      text: "Please sign.",
      cc: [{ email: "legal@example.net" }],
      attachments: [{ filename: "contract.bin", content: file, scanState: "clean" }],
    });
    const to = at("ops");
    const res = await post(`/v1/messages/${inbound.messageId}:forward`, { to: [{ email: to }], mode: "attachment" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.message.attachments.map((a: any) => [a.filename, a.contentType])).toEqual([["Contract.eml", "message/rfc822"]]);
    await submissionWhen(res.body.submission.id, (s) => s.status === "delivered");
    const parsed = parseWithPython(copyFor(to).raw);
    const attached = leaves(parsed.tree).find((p) => p.type === "message/rfc822")!;
    expect(attached.inner!.subject).toBe("Contract");
    expect(leaves(attached.inner!.tree!).map((p) => [p.type, p.filename, p.sha256])).toEqual([
      ["text/plain", null, sha256(Buffer.from("Please sign."))],
      ["application/octet-stream", "contract.bin", sha256(file)],
    ]);

    // An outbound original travels as it was sent.
    const original = await post(`/v1/inboxes/${inbox.id}/messages`, { to: [{ email: at("pat") }], subject: "Sent before", text: "Original." });
    const onward = await post(`/v1/messages/${original.body.message.id}:forward`, { to: [{ email: at("quinn") }], mode: "attachment", text: "As sent:" });
    expect(onward.status).toBe(202);
    const [row] = await app.db.sql.query<{ mime: Buffer }>("select mime from submissions where id = $1", [onward.body.submission.id]);
    expect(row!.mime.toString("latin1")).toContain(`Message-ID: ${original.body.message.internetMessageId}`);
  });

  test("a key that may only reply may not forward", async () => {
    const inbound = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: inbox.id });
    const replyOnly = await tenant.issueKey({ scopes: ["mailbox:send"], sendMode: "reply_only" });
    const res = await post(`/v1/messages/${inbound.messageId}:forward`, { to: [{ email: at("zed") }] }, key(), tenant, { "x-api-key": replyOnly.key });
    expect(res).toMatchObject({ status: 403, body: { error: "send_mode_reply_only" } });
  });
});

describe("the operator's view with DELIVERY_WORKFLOWS=all", () => {
  test("a plain send's story is in the Temporal UI: its summary, each recipient's outcome and reply in the first attempt, the details and the result", async () => {
    const all = await startTestApp({
      SMTP_ROUTES: `*=127.0.0.1:${sink.port}`,
      DELIVERY_WORKFLOWS: "all",
      DELIVERY_RETRY_INITIAL: "200ms",
      DELIVERY_RETRY_MAX: "400ms",
      DELIVERY_QUEUE_LIFETIME: "2s",
    });
    try {
      await all.startWorker();
      const owner = await all.createTenant();
      const own = (await owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("ui"), displayName: "UI" } })).body;
      const [to, cc, bcc] = [at("alice"), at("reject-carol"), at("defer-dave")];
      const sent = await post(`/v1/inboxes/${own.id}/messages`, { to: [{ email: to }], cc: [{ email: cc }], bcc: [{ email: bcc }], subject: "s", text: "t" }, key(), owner);
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      const handle = all.temporal.workflow.getHandle(deliveryWorkflowId(sent.body.submission.id));
      const result = await eventually(() => handle.result().catch(() => undefined), 30_000);

      expect(await (await handle.describe()).staticSummary()).toBe("Delivery to 1 recipient domain");
      // The workflow made the first attempt itself: its result names every recipient, with the peer's reply.
      const [first] = await attemptResults(all.temporal, sent.body.submission.id);
      expect(first).toEqual({
        remaining: 1,
        recipients: [
          { email: to, status: "delivered", replyCode: 250, reply: expect.stringMatching(/^250 /) },
          { email: cc, status: "bounced", replyCode: 550, reply: expect.stringMatching(/^550 5\.1\.1 /) },
          { email: bcc, status: "deferred", replyCode: 451, reply: expect.stringMatching(/^451 4\.2\.0 /) },
        ],
      });
      expect((await handle.query<{ currentDetails: string }>("__temporal_workflow_metadata")).currentDetails).toMatch(/^Recipients attempted: 1 delivered, 1 bounced, 1 deferred$/);
      // Dave was deferred until the queue lifetime ran out: the result counts each recipient's last attempt.
      expect(result).toEqual({ domains: 1, recipients: { delivered: 1, bounced: 1, deferred: 1 } });
      expect((await submissionWhen(sent.body.submission.id, (x) => x.status === "partially_delivered", owner)).recipients[2]).toMatchObject({ status: "failed" });
    } finally {
      await all.stop();
    }
  });
});
