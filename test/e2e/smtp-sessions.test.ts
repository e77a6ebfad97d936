// Session limits of the SMTP listener: idle time, total session time and concurrent connections, each answered
// with 421 and a closed connection, as RFC 5321 has a server end a session it will not continue.
import { afterAll, beforeAll, expect, test } from "vitest";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { startTestApp, type TestApp } from "../support/harness.js";
import { RawSmtpClient } from "../support/smtp-client.js";

let app: TestApp;
let smtp: SmtpRole;

beforeAll(async () => {
  app = await startTestApp({ SMTP_IDLE_TIMEOUT_MS: "1000", SMTP_SESSION_TIMEOUT_MS: "2500", SMTP_MAX_CONNECTIONS: "2" });
  smtp = await app.startSmtp();
});
afterAll(() => app?.stop());

test("ends a session that stays idle longer than the idle timeout with 421", async () => {
  const { client } = await RawSmtpClient.connect(smtp.port);
  await client.command("EHLO idle.example");
  const started = Date.now();
  const reply = await client.reply();
  expect(reply?.code).toBe(421);
  await client.closed;
  expect(Date.now() - started).toBeGreaterThanOrEqual(900);
});

test("ends a busy session at the session time limit with 421 4.4.2, however active it is", async () => {
  const { client } = await RawSmtpClient.connect(smtp.port);
  await client.command("EHLO busy.example");
  const started = Date.now();
  let reply = await client.command("NOOP");
  while (reply?.code === 250) {
    await new Promise((r) => setTimeout(r, 200));
    reply = await client.command("NOOP");
  }
  expect([reply?.code, reply?.text]).toEqual([421, "4.4.2 session time limit reached, closing connection"]);
  await client.closed;
  expect(Date.now() - started).toBeLessThan(5000);
});

test("refuses connections beyond the limit with 421 and accepts again once one closes", async () => {
  const first = await RawSmtpClient.connect(smtp.port);
  const second = await RawSmtpClient.connect(smtp.port);
  expect([first.greeting?.code, second.greeting?.code]).toEqual([220, 220]);
  const third = await RawSmtpClient.connect(smtp.port);
  expect(third.greeting?.code).toBe(421);
  expect(third.greeting?.text).toMatch(/too many connected clients/i);
  await third.client.closed;
  await first.client.quit();
  await first.client.closed;
  const fourth = await RawSmtpClient.connect(smtp.port);
  expect(fourth.greeting?.code).toBe(220);
  await Promise.all([second.client.quit(), fourth.client.quit()]);
});

test("greets with the configured host name and offers STARTTLS but never AUTH", async () => {
  const { client, greeting } = await RawSmtpClient.connect(smtp.port);
  expect(greeting?.text).toMatch(new RegExp(`^${app.config.smtp.hostname} ESMTP`));
  const ehlo = await client.command("EHLO features.example");
  expect(ehlo?.text.split("\n")).toEqual(expect.arrayContaining(["STARTTLS", "8BITMIME", "SMTPUTF8", "SIZE 10485760"]));
  expect(ehlo?.text).not.toMatch(/AUTH/);
  expect((await client.command("AUTH PLAIN AGFAYg=="))?.code).toBe(500);
  const tls = await client.startTls();
  expect(tls.getPeerCertificate().subject?.CN).toBe(app.config.smtp.hostname);
  expect((await client.command("EHLO features.example"))?.text).not.toMatch(/STARTTLS/);
  await client.quit();
});
