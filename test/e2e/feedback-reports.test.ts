// ARF feedback reports (RFC 5965) through the real smtp role: a report to the feedback address about a message an
// organization sent becomes a complaint and a suppression of the complaining recipient, visible through the API;
// anything else sent there is dropped; nothing sent there is ever stored in an inbox.
import { randomUUID } from "node:crypto";
import { createTransport } from "nodemailer";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Complaint, InboundRawMessage, Message, Suppression } from "../../src/db/entities/index.js";
import type { SmtpRole } from "../../src/inbound/smtp-role.js";
import { seedSubmission, seedSuppression } from "../support/delivery-rows.js";
import { feedbackReport, type FeedbackReportOptions } from "../support/feedback-report.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { webhookEndpoint } from "../support/inbound-ports.js";
import { RawSmtpClient } from "../support/smtp-client.js";

let app: TestApp;
let smtp: SmtpRole;
let feedbackAddress: string;

beforeAll(async () => {
  // Endpoints at 127.0.0.1 are allowed, so a test can give a tenant one that nothing should ever be sent to.
  app = await startTestApp({ WEBHOOK_ALLOW_HOSTS: "127.0.0.1" });
  smtp = await app.startSmtp();
  feedbackAddress = app.config.feedbackAddress;
});
afterAll(() => app?.stop());

/** Sends raw bytes over SMTP and answers the id of the committed raw message (from the 250 reply). */
async function send(raw: Buffer, to: string[] = [feedbackAddress]): Promise<string> {
  const info = await createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, ignoreTLS: true }).sendMail({
    envelope: { from: "fbl@provider.example", to },
    raw,
  });
  const rawId = /queued as ([0-9a-f-]{36})/.exec(info.response)?.[1];
  expect(rawId, info.response).toBeDefined();
  return rawId!;
}

/** Waits until processing has consumed the raw message (recorded or dropped). */
async function processed(rawId: string): Promise<void> {
  await eventually(async () => ((await app.db.fork().findOne(InboundRawMessage, rawId)) === null ? true : undefined));
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
    const recipient = `${uniqueName("reader")}@example.com`;
    const { tenant, submissionId, messageId } = await sentTo([recipient, `${uniqueName("other")}@example.com`]);
    await webhookEndpoint(tenant, "https://127.0.0.1/never-called");
    const rawId = await send(report({ messageId, rcptTo: recipient.toUpperCase() }));

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
    const recipient = `${uniqueName("solo")}@example.com`;
    const { tenant, messageId } = await sentTo([recipient]);
    await send(report({ messageId, rcptTo: null, returned: "headers", feedbackType: "fraud" }));
    const [complaint] = await eventually(async () => {
      const rows = await complaintsOf(tenant);
      return rows.length > 0 ? rows : undefined;
    });
    expect(complaint).toMatchObject({ email: recipient, feedbackType: "fraud" });
    expect(await app.db.fork().findOne(Suppression, { organization: tenant.organizationId, email: recipient })).toMatchObject({
      reason: "complaint",
    });
  });

  test("a second report adds a complaint and keeps the one suppression; an earlier hard bounce keeps its reason", async () => {
    const recipient = `${uniqueName("twice")}@example.com`;
    const bounced = `${uniqueName("bounced")}@example.com`;
    const { tenant, messageId } = await sentTo([recipient, bounced]);
    await seedSuppression(app.db, tenant.organizationId, { email: bounced, reason: "hard_bounce", detail: "550 5.1.1 no such user" });
    for (const rcptTo of [recipient, recipient, bounced]) await processed(await send(report({ messageId, rcptTo })));
    expect((await complaintsOf(tenant)).map((c) => c.email).sort()).toEqual([recipient, recipient, bounced].sort());
    const rows = await app.db.fork().find(Suppression, { organization: tenant.organizationId }, { orderBy: { email: "asc" } });
    expect(rows.map((r) => [r.email, r.reason])).toEqual(
      [
        [recipient, "complaint"],
        [bounced, "hard_bounce"],
      ].sort((a, b) => a[0]!.localeCompare(b[0]!)),
    );
  });

  test("drops a report naming an unknown Message-ID, one naming a stranger, a not-spam report and mail that is no report", async () => {
    const recipient = `${uniqueName("safe")}@example.com`;
    const { tenant, messageId } = await sentTo([recipient, `${uniqueName("two")}@example.com`]);
    const marker = uniqueName("agent");
    const dropped = [
      report({ messageId: `<${randomUUID()}@agents.test>`, rcptTo: recipient, userAgent: marker }),
      report({ messageId, rcptTo: `${uniqueName("stranger")}@example.com`, userAgent: marker }),
      // Two recipients and none named: which one complained is unknown.
      report({ messageId, rcptTo: null, userAgent: marker }),
      report({ messageId, rcptTo: recipient, feedbackType: "not-spam", userAgent: marker }),
      Buffer.from(`From: someone@example.org\r\nTo: ${feedbackAddress}\r\nSubject: hello\r\nMessage-ID: ${messageId}\r\n\r\nnot a report\r\n`),
    ];
    // Dropped means consumed: processed() waits for the raw message to be deleted, which a failure would not do.
    for (const raw of dropped) await processed(await send(raw));
    expect(await app.db.fork().count(Complaint, { userAgent: marker })).toBe(0);
    expect(await complaintsOf(tenant)).toEqual([]);
    expect((await tenant.request("GET", "/v1/suppressions")).body.suppressions).toEqual([]);
  });

  test("a message to the feedback address and an inbox is stored for the inbox only, and its report recorded", async () => {
    const recipient = `${uniqueName("both")}@example.com`;
    const { tenant, messageId } = await sentTo([recipient]);
    const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("abuse-desk"), displayName: "Desk" } });
    expect(inbox.status).toBe(201);
    const rawId = await send(report({ messageId, rcptTo: recipient }), [feedbackAddress, inbox.body.address]);
    await processed(rawId);
    const stored = await app.db.fork().find(Message, { rawId });
    expect(stored.map((m) => m.inboxId)).toEqual([inbox.body.id]);
    expect((await complaintsOf(tenant)).map((c) => c.email)).toEqual([recipient]);
  });
});
