// ARF feedback reports (RFC 5965) through the real smtp role: a report to the feedback address about a message an
// organization sent becomes a complaint and a suppression of the complaining recipient, visible through the API —
// once per submission and recipient, and only when DKIM or SPF (checked against records on a real DNS server,
// through DNS_SERVERS) authenticates its sender as a configured feedback loop or as the recipient itself; another
// user of the recipient's provider is neither. Anything else sent there is dropped; nothing sent there is ever
// stored in an inbox.
import { randomUUID } from "node:crypto";
import { createTransport } from "nodemailer";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Complaint, InboundRawMessage, Message, Suppression } from "../../src/db/entities/index.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { seedSubmission, seedSuppression } from "../support/delivery-rows.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { feedbackReport, publishDkimKey, publishSpf, type DkimSigner, type FeedbackReportOptions } from "../support/feedback-report.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { webhookEndpoint } from "../support/inbound-ports.js";
import { RawSmtpClient } from "../support/smtp-client.js";

let app: TestApp;
let dns: TestDnsServer;
let smtp: SmtpRole;
let feedbackAddress: string;

/** FEEDBACK_LOOP_SENDERS of this app: a loop's domain (and its subdomains) and one loop address. */
const LOOP_DOMAIN = "loops.example";
const LOOP_ADDRESS = "staff@webmail.example";

beforeAll(async () => {
  dns = await startDnsServer();
  // Endpoints at 127.0.0.1 are allowed, so a test can give a tenant one that nothing should ever be sent to.
  app = await startTestApp({
    DNS_SERVERS: dns.serverList,
    DNS_TIMEOUT_MS: "500",
    FEEDBACK_LOOP_SENDERS: `${LOOP_DOMAIN},${LOOP_ADDRESS}`,
    WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
  });
  smtp = await app.startSmtp();
  feedbackAddress = app.config.feedbackAddress;
});
afterAll(async () => {
  await app?.stop();
  await dns?.stop();
});

interface Sender {
  /** MAIL FROM; "" for the null reverse-path. */
  readonly mailFrom: string;
  readonly dkim?: DkimSigner;
}

/** Sends raw bytes over SMTP and answers the id of the committed raw message (from the 250 reply). */
async function send(raw: Buffer, sender: Sender, to: string[] = [feedbackAddress]): Promise<string> {
  const info = await createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, ignoreTLS: true }).sendMail({
    envelope: { from: sender.mailFrom, to },
    raw,
    ...(sender.dkim ? { dkim: sender.dkim } : {}),
  });
  const rawId = /queued as ([0-9a-f-]{36})/.exec(info.response)?.[1];
  expect(rawId, info.response).toBeDefined();
  return rawId!;
}

/** Waits until processing has consumed the raw message (recorded or dropped). */
async function processed(rawId: string): Promise<void> {
  await eventually(async () => ((await app.db.fork().findOne(InboundRawMessage, rawId)) === null ? true : undefined));
}

/**
 * A mailbox provider of its own, whose users are at `domain`, and its feedback loop, which sends from a subdomain of
 * the configured loop domain whose SPF record authorizes the loopback addresses tests send from.
 */
function mailboxProvider(spf: "pass" | "fail" = "pass"): { domain: string; reporter: Sender } {
  const name = uniqueName("provider");
  publishSpf(dns, `${name}.${LOOP_DOMAIN}`, spf);
  return { domain: `${name}.example`, reporter: { mailFrom: `fbl@${name}.${LOOP_DOMAIN}` } };
}

/** A tenant with one sent submission to the given recipients. */
async function sentTo(recipients: string[]): Promise<{ tenant: Tenant; submissionId: string; messageId: string }> {
  const tenant = await app.createTenant({ managedLimit: 5 });
  const { id, internetMessageId } = await seedSubmission(app.db, tenant.organizationId, {
    recipients: recipients.map((email) => ({ email, status: "delivered", latencyMs: 100 })),
  });
  return { tenant, submissionId: id, messageId: internetMessageId };
}

const report = (options: FeedbackReportOptions) => feedbackReport({ to: feedbackAddress, ...options });
const complaintsOf = (tenant: Tenant) => app.db.fork().find(Complaint, { organization: tenant.organizationId });

describe("feedback reports to the feedback address", () => {
  test("admits RCPT TO the feedback address with 250", async () => {
    const { client } = await RawSmtpClient.connect(smtp.port);
    expect((await client.command("EHLO reporter.example"))?.code).toBe(250);
    expect((await client.command("MAIL FROM:<fbl@provider.example>"))?.code).toBe(250);
    expect((await client.command(`RCPT TO:<${feedbackAddress.toUpperCase()}>`))?.code).toBe(250);
    await client.command("QUIT");
  });

  test("records a complaint and suppresses the recipient, visible through GET /v1/complaints and /v1/suppressions", async () => {
    const provider = mailboxProvider();
    const recipient = `${uniqueName("reader")}@${provider.domain}`;
    const { tenant, submissionId, messageId } = await sentTo([recipient, `${uniqueName("other")}@example.com`]);
    await webhookEndpoint(tenant, "https://127.0.0.1/never-called");
    const rawId = await send(report({ messageId, rcptTo: recipient.toUpperCase() }), provider.reporter);

    const complaints = await eventually(async () => {
      const res = await tenant.request("GET", "/v1/complaints");
      return res.body.complaints.length > 0 ? res.body.complaints : undefined;
    });
    expect(complaints).toEqual([
      {
        id: expect.any(String),
        email: recipient,
        feedbackType: "abuse",
        submissionId,
        userAgent: "SomeGenerator/1.0",
        createdAt: expect.any(String),
      },
    ]);
    const suppressions = await tenant.request("GET", "/v1/suppressions");
    expect(suppressions.body).toEqual({
      suppressions: [{ email: recipient, reason: "complaint", detail: `abuse report by SomeGenerator/1.0 about ${messageId}`, createdAt: complaints[0].createdAt }],
      nextCursor: null,
    });
    const metrics = await tenant.request("GET", "/v1/metrics/delivery");
    expect(metrics.body).toMatchObject({ counts: { delivered: 2, complaints: 1 }, complaintRate: 0.5 });

    // The report is not mail for anyone: not stored in an inbox, no event, and its raw message is gone.
    await processed(rawId);
    expect(await app.db.fork().count(Message, { rawId })).toBe(0);
    expect(await app.db.sql.query(`select id from webhook_deliveries where organization_id = $1`, [tenant.organizationId])).toEqual([]);
  });

  test("a report in headers-only form that names no recipient is about the submission's only recipient", async () => {
    const provider = mailboxProvider();
    const recipient = `${uniqueName("solo")}@${provider.domain}`;
    const { tenant, messageId } = await sentTo([recipient]);
    await send(report({ messageId, rcptTo: null, returned: "headers", feedbackType: "fraud" }), provider.reporter);
    const [complaint] = await eventually(async () => {
      const rows = await complaintsOf(tenant);
      return rows.length > 0 ? rows : undefined;
    });
    expect(complaint).toMatchObject({ email: recipient, feedbackType: "fraud" });
    expect(await app.db.fork().findOne(Suppression, { organization: tenant.organizationId, email: recipient })).toMatchObject({
      reason: "complaint",
    });
  });

  test("an authenticated report from a feedback loop is recorded once however often it arrives; a removed suppression stays removed", async () => {
    // Yahoo's way: DKIM-signed by the loop's domain (arf.mail.yahoo.com), From the same, whatever the envelope.
    const provider = `${uniqueName("provider")}.example`;
    const loop = `arf.${uniqueName("provider")}.${LOOP_DOMAIN}`;
    const signer = publishDkimKey(dns, loop);
    const recipient = `${uniqueName("thrice")}@${provider}`;
    const { tenant, messageId } = await sentTo([recipient, `${uniqueName("quiet")}@${provider}`]);
    const signed = report({ messageId, rcptTo: recipient, from: `feedback@${loop}` });
    const reporter = { mailFrom: `bounces@${uniqueName("relay")}.example`, dkim: signer };

    await processed(await send(signed, reporter));
    expect((await complaintsOf(tenant)).map((c) => c.email)).toEqual([recipient]);
    expect((await tenant.request("DELETE", "/v1/suppressions", { body: { email: recipient } })).status).toBe(204);
    for (let i = 0; i < 2; i++) await processed(await send(signed, reporter));

    expect((await complaintsOf(tenant)).map((c) => c.email)).toEqual([recipient]);
    expect((await tenant.request("GET", "/v1/suppressions")).body.suppressions).toEqual([]);
    expect((await tenant.request("GET", "/v1/metrics/delivery")).body.counts).toMatchObject({ complaints: 1 });
  });

  test("an earlier hard bounce keeps its reason when the recipient complains", async () => {
    const provider = mailboxProvider();
    const bounced = `${uniqueName("bounced")}@${provider.domain}`;
    const { tenant, messageId } = await sentTo([bounced]);
    await seedSuppression(app.db, tenant.organizationId, { email: bounced, reason: "hard_bounce", detail: "550 5.1.1 no such user" });
    await processed(await send(report({ messageId, rcptTo: bounced }), provider.reporter));
    expect((await complaintsOf(tenant)).map((c) => c.email)).toEqual([bounced]);
    expect(await app.db.fork().findOne(Suppression, { organization: tenant.organizationId, email: bounced })).toMatchObject({ reason: "hard_bounce" });
  });

  test("a report from another user of the recipient's provider, authenticated as its domain, is dropped; one from the recipient itself is believed", async () => {
    // A big provider: its users send DKIM-signed by it and from addresses its SPF record authorizes.
    const provider = `${uniqueName("bigmail")}.example`;
    publishSpf(dns, provider);
    const signer = publishDkimKey(dns, provider);
    const [victim, attacker, self] = ["victim", "attacker", "self"].map((local) => `${uniqueName(local)}@${provider}`) as [string, string, string];
    const { tenant, messageId } = await sentTo([victim, attacker, self]);
    const marker = uniqueName("peer");
    // SPF passes for the provider's domain, and DKIM too, with the attacker's own From: not the victim.
    await processed(await send(report({ messageId, rcptTo: victim, userAgent: marker, from: attacker }), { mailFrom: attacker }));
    await processed(await send(report({ messageId, rcptTo: victim, userAgent: marker, from: attacker }), { mailFrom: "", dkim: signer }));
    expect(await app.db.fork().count(Complaint, { userAgent: marker })).toBe(0);
    // The recipient complaining about mail to itself.
    await processed(await send(report({ messageId, rcptTo: self, from: self }), { mailFrom: "", dkim: signer }));
    expect((await complaintsOf(tenant)).map((c) => c.email)).toEqual([self]);
    expect((await tenant.request("GET", "/v1/suppressions")).body.suppressions.map((s: { email: string }) => s.email)).toEqual([self]);
  });

  test("a report that is not authenticated as from a feedback loop or the recipient is dropped and suppresses nobody", async () => {
    // The victim's provider's loop publishes SPF that lists none of the addresses tests send from.
    const victimProvider = mailboxProvider("fail");
    const victim = `${uniqueName("victim")}@${victimProvider.domain}`;
    // The forger received the message too, at a provider of its own, and knows its Message-ID and the To list.
    const forgerProvider = `${uniqueName("forgers")}.example`;
    publishSpf(dns, forgerProvider);
    const forger = `${uniqueName("forger")}@${forgerProvider}`;
    const forgerKey = publishDkimKey(dns, forgerProvider);
    const { tenant, messageId } = await sentTo([victim, forger]);
    const marker = uniqueName("forged");
    const forged = (from = "abusedesk@example.com") => report({ messageId, rcptTo: victim, userAgent: marker, from });
    const attempts: [Buffer, Sender][] = [
      // SPF passes, and DKIM too, but for the forger's own domain and address: not a loop, not the victim.
      [forged(), { mailFrom: forger }],
      [forged(forger), { mailFrom: "", dkim: forgerKey }],
      // The loop of the victim's provider as MAIL FROM, sent from an address its SPF record does not list.
      [forged(), victimProvider.reporter],
      // A domain without SPF, and the null reverse-path with a HELO nobody authorized.
      [forged(), { mailFrom: `fbl@${uniqueName("nospf")}.example` }],
      [forged(), { mailFrom: "" }],
      // A valid DKIM signature of the forger's domain over a From of the victim's provider: not aligned.
      [forged(`abuse@${victimProvider.domain}`), { mailFrom: "", dkim: forgerKey }],
      // A signature claiming the victim's provider, under a selector with no published key: it does not verify.
      [forged(`abuse@${victimProvider.domain}`), { mailFrom: "", dkim: { ...forgerKey, domainName: victimProvider.domain, keySelector: "nokey" } }],
    ];
    for (const [raw, sender] of attempts) await processed(await send(raw, sender));
    expect(await app.db.fork().count(Complaint, { userAgent: marker })).toBe(0);
    expect(await complaintsOf(tenant)).toEqual([]);
    expect((await tenant.request("GET", "/v1/suppressions")).body.suppressions).toEqual([]);
  });

  test("a configured feedback-loop domain or address is believed about any recipient; another address of its domain is not", async () => {
    const [a, b, c] = ["a", "b", "c"].map((local) => `${uniqueName(local)}@${uniqueName("hosted")}.example`) as [string, string, string];
    const { tenant, messageId } = await sentTo([a, b, c]);
    // A subdomain of a loop domain, SPF-authenticated.
    publishSpf(dns, `reports.${LOOP_DOMAIN}`);
    await processed(await send(report({ messageId, rcptTo: a }), { mailFrom: `complaints@reports.${LOOP_DOMAIN}` }));
    // The loop address, DKIM-authenticated (Microsoft's way: staff@hotmail.com for outlook.com users).
    const webmail = publishDkimKey(dns, "webmail.example");
    await processed(await send(report({ messageId, rcptTo: b, from: LOOP_ADDRESS }), { mailFrom: "", dkim: webmail }));
    // Any other user of that webmail, signed the same way, is not the loop.
    await processed(await send(report({ messageId, rcptTo: c, from: `${uniqueName("user")}@webmail.example` }), { mailFrom: "", dkim: webmail }));

    expect((await complaintsOf(tenant)).map((complaint) => complaint.email).sort()).toEqual([a, b].sort());
  });

  test("drops a report naming an unknown Message-ID, one naming a stranger, a not-spam report and mail that is no report", async () => {
    const provider = mailboxProvider();
    const recipient = `${uniqueName("safe")}@${provider.domain}`;
    const { tenant, messageId } = await sentTo([recipient, `${uniqueName("two")}@${provider.domain}`]);
    const marker = uniqueName("agent");
    const dropped = [
      report({ messageId: `<${randomUUID()}@agents.test>`, rcptTo: recipient, userAgent: marker }),
      report({ messageId, rcptTo: `${uniqueName("stranger")}@${provider.domain}`, userAgent: marker }),
      // Two recipients and none named: which one complained is unknown.
      report({ messageId, rcptTo: null, userAgent: marker }),
      report({ messageId, rcptTo: recipient, feedbackType: "not-spam", userAgent: marker }),
      Buffer.from(`From: someone@example.org\r\nTo: ${feedbackAddress}\r\nSubject: hello\r\nMessage-ID: ${messageId}\r\n\r\nnot a report\r\n`),
    ];
    // Dropped means consumed: processed() waits for the raw message to be deleted, which a failure would not do.
    for (const raw of dropped) await processed(await send(raw, provider.reporter));
    expect(await app.db.fork().count(Complaint, { userAgent: marker })).toBe(0);
    expect(await complaintsOf(tenant)).toEqual([]);
    expect((await tenant.request("GET", "/v1/suppressions")).body.suppressions).toEqual([]);
  });

  test("a message to the feedback address and an inbox is stored for the inbox only, and its report recorded", async () => {
    const provider = mailboxProvider();
    const recipient = `${uniqueName("both")}@${provider.domain}`;
    const { tenant, messageId } = await sentTo([recipient]);
    const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("abuse-desk"), displayName: "Desk" } });
    expect(inbox.status).toBe(201);
    const rawId = await send(report({ messageId, rcptTo: recipient }), provider.reporter, [feedbackAddress, inbox.body.address]);
    await processed(rawId);
    const stored = await app.db.fork().find(Message, { rawId });
    expect(stored.map((m) => m.inboxId)).toEqual([inbox.body.id]);
    expect((await complaintsOf(tenant)).map((c) => c.email)).toEqual([recipient]);
  });
});
