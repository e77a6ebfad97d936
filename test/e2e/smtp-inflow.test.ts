// The in-flow delay through a real smtp role: with processing held (the inbox row locked, so accepted mail waits in
// hand), MAIL FROM is answered at once while the backlog is under the mark, and waits once it is over, for every
// session together, until processing stores mail again; then each waiting transaction goes ahead and nothing
// accepted is lost. Observed through the operators' gauges, not wall time.
import { afterAll, beforeAll, expect, test } from "vitest";
import { MIN_MARK_MESSAGES } from "../../src/inbound/in-flow.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { holdInbox } from "../support/hold-inbox.js";
import { RawSmtpClient, transaction } from "../support/smtp-client.js";

const METRICS_TOKEN = "inflow-metrics-token-0123456789";
/** Long enough that a transaction released before it was released by storing, not by its longest delay. */
const MAX_DELAY_MS = 60_000;

let app: TestApp;
let smtp: SmtpRole;
let tenant: Tenant;

beforeAll(async () => {
  app = await startTestApp({
    METRICS_TOKEN,
    INBOUND_INFLOW_DELAY: "on",
    INBOUND_INFLOW_MAX_DELAY_MS: String(MAX_DELAY_MS),
    // The longest delay is held under half the idle timeout.
    SMTP_IDLE_TIMEOUT_MS: String(4 * MAX_DELAY_MS),
  });
  smtp = await app.startSmtp();
  tenant = await app.createTenant({ managedLimit: 5 });
});
afterAll(() => app?.stop());

/** The value of an unlabelled gauge in this process's scrape. */
async function gauge(name: string): Promise<number> {
  const res = await fetch(`${app.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(res.status).toBe(200);
  const line = new RegExp(`^${name} (\\S+)$`, "m").exec(await res.text());
  if (!line) throw new Error(`no ${name} in the scrape`);
  return Number(line[1]);
}

const storedCount = async (inboxId: string) =>
  (await app.db.sql.query<{ n: number }>(`select count(*)::int as n from messages where inbox_id = $1`, [inboxId]))[0]!.n;

async function session(): Promise<RawSmtpClient> {
  const { client, greeting } = await RawSmtpClient.connect(smtp.port);
  expect(greeting?.code).toBe(220);
  expect((await client.command("EHLO inflow.example"))?.code).toBe(250);
  return client;
}

test("delays MAIL FROM of every session while the backlog is over its mark, until processing stores mail, and not before", { timeout: 180_000 }, async () => {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("inflow"), displayName: "In-flow" } });
  expect(res.status).toBe(201);
  const inbox = res.body as { id: string; address: string };
  const message = (n: number) => ({ from: "s@example.org", to: [inbox.address], data: `Subject: ${n}\r\n\r\nmessage ${n}\r\n` });

  const hold = await holdInbox(app.db, inbox.id);
  const waiting: RawSmtpClient[] = [];
  let sent = 0;
  try {
    // Up to the mark's floor (nothing stored yet, so the mark is no more than it), every MAIL FROM is answered at once.
    const sender = await session();
    for (; sent < MIN_MARK_MESSAGES + 1; sent++) {
      const replies = await transaction(sender, message(sent));
      expect([replies.mail?.code, replies.message?.code]).toEqual([250, 250]);
    }
    await sender.quit();
    expect(await gauge("mailbox_inbound_inflow_delayed_transactions")).toBe(0);
    expect(await gauge("mailbox_inbound_inflow_waiting_transactions")).toBe(0);

    // Over it: two sessions' MAIL FROM wait (the rule holds all sessions, not each), and a third whose sender
    // hangs up while it waits.
    for (let i = 0; i < 3; i++) {
      const client = await session();
      client.write("MAIL FROM:<s@example.org>\r\n");
      waiting.push(client);
    }
    await eventually(async () => ((await gauge("mailbox_inbound_inflow_waiting_transactions")) === 3 ? true : undefined));
    expect(await gauge("mailbox_inbound_inflow_delayed_transactions")).toBe(0);
    waiting.pop()!.destroy();
  } finally {
    await hold.release();
  }

  // Storing resumes: each waiting transaction goes ahead, long before its longest delay, and completes.
  const started = Date.now();
  for (const client of waiting) {
    expect((await client.reply(MAX_DELAY_MS))?.code).toBe(250);
    expect((await client.command(`RCPT TO:<${inbox.address}>`))?.code).toBe(250);
    expect((await client.command("DATA"))?.code).toBe(354);
    client.write(`Subject: ${sent}\r\n\r\nmessage ${sent++}\r\n.\r\n`);
    expect((await client.reply())?.code).toBe(250);
    await client.quit();
  }
  expect(Date.now() - started).toBeLessThan(MAX_DELAY_MS);
  // The hung-up session's wait ends too (with a token, or at its longest delay), and answering it harms nothing.
  await eventually(async () => ((await gauge("mailbox_inbound_inflow_waiting_transactions")) === 0 ? true : undefined), MAX_DELAY_MS + 10_000);
  expect(await gauge("mailbox_inbound_inflow_delayed_transactions")).toBe(3);
  expect(await gauge("mailbox_inbound_inflow_delay_seconds")).toBeGreaterThan(0);
  await eventually(async () => ((await storedCount(inbox.id)) === sent ? true : undefined), 60_000);

  // Drained under the mark: answered at once again.
  const after = await session();
  expect((await after.command("MAIL FROM:<s@example.org>"))?.code).toBe(250);
  await after.quit();
  expect(await gauge("mailbox_inbound_inflow_delayed_transactions")).toBe(3);
});
