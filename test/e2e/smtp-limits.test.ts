// The SMTP edge under abuse: relaying, unknown recipients, every session limit with its proper reply, SMTP
// smuggling, a message sent before its 354, and durable acceptance (451 when the commit fails). A raw socket client sends the exact bytes.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { updateOrganization } from "../../src/admin/organizations.js";
import { CustomerDomain, InboundRawMessage, Message } from "../../src/db/entities/index.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { RawSmtpClient, sendRaw, transaction } from "../support/smtp-client.js";

const LIMITS = {
  LIMIT_MESSAGE_CONTENT_BYTES: "65536",
  SMTP_MAX_RECIPIENTS: "3",
  SMTP_MAX_HEADER_BYTES: "2048",
  SMTP_MAX_MIME_DEPTH: "3",
  SMTP_MAX_MIME_PARTS: "10",
};

let app: TestApp;
let smtp: SmtpRole;
let tenant: Tenant;

beforeAll(async () => {
  app = await startTestApp(LIMITS);
  smtp = await app.startSmtp();
  tenant = await app.createTenant({ managedLimit: 100 });
});
afterAll(() => app?.stop());

async function createInbox(): Promise<{ id: string; address: string }> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("limits"), displayName: "Limits" } });
  expect(res.status).toBe(201);
  return res.body;
}

const storedCount = (inboxId: string) => app.db.fork().count(Message, { inboxId });
/** The codes of the next `n` replies (pipelined commands are answered in order). */
const replyCodes = (client: RawSmtpClient, n: number) => Promise.all(Array.from({ length: n }, () => client.reply().then((r) => r?.code)));
/** The inbox's messages once there is one. */
const storedMessages = (inboxId: string) =>
  eventually(async () => {
    const rows = await app.db.fork().find(Message, { inboxId });
    return rows.length > 0 ? rows : undefined;
  });
const rawCount = (mailFrom: string) => app.db.fork().count(InboundRawMessage, { mailFrom });
const sender = () => `${uniqueName("sender")}@example.org`;
const message = (subject: string, body = "body") => `From: someone@example.org\r\nSubject: ${subject}\r\n\r\n${body}\r\n`;

/** A message whose MIME parts nest `depth` multiparts deep. */
function nestedMessage(depth: number): string {
  let part = "Content-Type: text/plain\r\n\r\nthe leaf\r\n";
  for (let level = depth; level >= 1; level--) {
    part = `Content-Type: multipart/mixed; boundary="level-${level}"\r\n\r\n--level-${level}\r\n${part}--level-${level}--\r\n`;
  }
  return `From: someone@example.org\r\nSubject: nested ${depth}\r\n${part}`;
}

/** A message of `parts` MIME parts in all: the multipart root and its text children. */
function manyPartsMessage(parts: number): string {
  const children = Array.from({ length: parts - 1 }, (_, i) => `--sep\r\nContent-Type: text/plain\r\n\r\npart ${i + 1}\r\n`).join("");
  return `From: someone@example.org\r\nSubject: ${parts} parts\r\nContent-Type: multipart/mixed; boundary=sep\r\n\r\n${children}--sep--\r\n`;
}

describe("recipient admission", () => {
  test("refuses every domain it does not receive for with 550 5.7.1, so it is never an open relay", async () => {
    const { client } = await RawSmtpClient.connect(smtp.port);
    await client.command("EHLO relay.example");
    expect((await client.command(`MAIL FROM:<${sender()}>`))?.code).toBe(250);
    for (const rcpt of ["victim@gmail.com", `x@sub.${app.config.managedDomain}`, `x@${app.config.managedDomain}.evil.example`]) {
      const reply = await client.command(`RCPT TO:<${rcpt}>`);
      expect([reply?.code, reply?.text]).toEqual([550, expect.stringMatching(/^5\.7\.1 /)]);
    }
    expect((await client.command("DATA"))?.code).toBe(503);
    await client.quit();
  });

  test("refuses an unknown or deleted local part with 550 5.1.1 and a suspended organization's inbox with 550 5.2.1", async () => {
    const deleted = await createInbox();
    expect((await tenant.request("DELETE", `/v1/inboxes/${deleted.id}`)).status).toBe(204);
    const suspended = await app.createTenant();
    const res = await suspended.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("susp"), displayName: "S" } });
    await updateOrganization(app.db.fork(), suspended.organizationId, { status: "suspended" });

    const { client } = await RawSmtpClient.connect(smtp.port);
    await client.command("EHLO c.example");
    await client.command(`MAIL FROM:<${sender()}>`);
    const unknown = await client.command(`RCPT TO:<${uniqueName("nobody")}@${app.config.managedDomain}>`);
    expect([unknown?.code, unknown?.text]).toEqual([550, expect.stringMatching(/^5\.1\.1 /)]);
    const gone = await client.command(`RCPT TO:<${deleted.address}>`);
    expect([gone?.code, gone?.text]).toEqual([550, expect.stringMatching(/^5\.1\.1 /)]);
    const disabled = await client.command(`RCPT TO:<${res.body.address}>`);
    expect([disabled?.code, disabled?.text]).toEqual([550, expect.stringMatching(/^5\.2\.1 /)]);
    await client.quit();
  });

  test("admits inboxes of an inbound-verified customer domain, and refuses a registered but unverified one with 550 5.7.1", async () => {
    const register = async () => {
      const res = await tenant.request("POST", "/v1/domains", { body: { domain: `${uniqueName("corp")}.example` } });
      expect(res.status).toBe(201);
      return res.body as { id: string; domain: string };
    };
    const verified = await register();
    const unverified = await register();
    // Verified by a check that just ran (what POST /v1/domains/{id}/verify records when the DNS records pass).
    const now = new Date();
    const passed = { state: "verified", lastCheckedAt: now.toISOString(), lastSuccessAt: now.toISOString(), graceUntil: null };
    await app.db.fork().nativeUpdate(CustomerDomain, { id: verified.id }, { inbound: passed, lastCheckedAt: now });
    const created = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "sales", displayName: "Sales", domainId: verified.id } });
    expect(created.status).toBe(201);

    const from = sender();
    const replies = await sendRaw(smtp.port, {
      from,
      to: [`Sales@${verified.domain.toUpperCase()}`, `nobody@${verified.domain}`, `sales@${unverified.domain}`],
      data: message("to a customer domain"),
    });
    expect(replies.rcpt.map((r) => r?.code)).toEqual([250, 550, 550]);
    expect(replies.rcpt[1]?.text).toMatch(/^5\.1\.1 /);
    expect(replies.rcpt[2]?.text).toMatch(/^5\.7\.1 /);
    expect(replies.message?.code).toBe(250);
    await eventually(async () => ((await storedCount(created.body.id)) === 1 ? true : undefined));
  });

  test("admits an address whatever its case, and stores the message once for its inbox", async () => {
    const inbox = await createInbox();
    const replies = await sendRaw(smtp.port, { from: sender(), to: [inbox.address.toUpperCase(), inbox.address], data: message("case") });
    expect(replies.rcpt.map((r) => r?.code)).toEqual([250, 250]);
    expect(replies.message?.code).toBe(250);
    await eventually(async () => ((await storedCount(inbox.id)) === 1 ? true : undefined));
  });

  test("answers 452 4.5.3 past the recipient limit and delivers to the recipients it admitted", async () => {
    const inboxes = [await createInbox(), await createInbox(), await createInbox(), await createInbox()];
    const replies = await sendRaw(smtp.port, { from: sender(), to: inboxes.map((i) => i.address), data: message("many") });
    expect(replies.rcpt.map((r) => r?.code)).toEqual([250, 250, 250, 452]);
    expect(replies.rcpt[3]?.text).toMatch(/^4\.5\.3 /);
    expect(replies.message?.code).toBe(250);
    for (const inbox of inboxes.slice(0, 3)) await eventually(async () => ((await storedCount(inbox.id)) === 1 ? true : undefined));
    expect(await storedCount(inboxes[3]!.id)).toBe(0);
  });
});

describe("message limits", () => {
  test("refuses a message over messageContentBytes with 552 5.3.4 once DATA ends, and stores nothing", async () => {
    const inbox = await createInbox();
    const from = sender();
    const big = message("too big", "x".repeat(70_000));
    const replies = await sendRaw(smtp.port, { from, to: [inbox.address], data: big });
    expect([replies.message?.code, replies.message?.text]).toEqual([552, expect.stringMatching(/^5\.3\.4 /)]);
    expect(await rawCount(from)).toBe(0);

    const fits = message("fits", "y".repeat(60_000));
    expect((await sendRaw(smtp.port, { from, to: [inbox.address], data: fits })).message?.code).toBe(250);
  });

  test("refuses a declared SIZE over the limit at MAIL FROM", async () => {
    const { client } = await RawSmtpClient.connect(smtp.port);
    const ehlo = await client.command("EHLO c.example");
    expect(ehlo?.text).toContain("SIZE 65536");
    expect((await client.command(`MAIL FROM:<${sender()}> SIZE=100000`))?.code).toBe(552);
    await client.quit();
  });

  test("refuses a header section over the limit with 552 5.3.4", async () => {
    const inbox = await createInbox();
    const from = sender();
    const data = `From: someone@example.org\r\nX-Padding: ${"h".repeat(2100)}\r\nSubject: fat header\r\n\r\nbody\r\n`;
    const replies = await sendRaw(smtp.port, { from, to: [inbox.address], data });
    expect([replies.message?.code, replies.message?.text]).toEqual([552, expect.stringMatching(/^5\.3\.4 message header/)]);
    expect(await rawCount(from)).toBe(0);
  });

  test("refuses MIME nested deeper than the limit, or with more parts, with 554 5.6.0", async () => {
    const inbox = await createInbox();
    const from = sender();
    const send = (data: string) => sendRaw(smtp.port, { from, to: [inbox.address], data });
    expect((await send(nestedMessage(3))).message?.code).toBe(250);
    const deep = (await send(nestedMessage(4))).message;
    expect([deep?.code, deep?.text]).toEqual([554, expect.stringMatching(/^5\.6\.0 MIME parts nested deeper than 3/)]);
    expect((await send(manyPartsMessage(10))).message?.code).toBe(250);
    const wide = (await send(manyPartsMessage(11))).message;
    expect([wide?.code, wide?.text]).toEqual([554, expect.stringMatching(/^5\.6\.0 message has more than 10 MIME parts/)]);
    await eventually(async () => ((await storedCount(inbox.id)) === 2 ? true : undefined));
    expect(await rawCount(from)).toBe(0);
  });

  test("drops a session whose command line is longer than 2048 bytes with 421", async () => {
    const { client } = await RawSmtpClient.connect(smtp.port);
    await client.command("EHLO c.example");
    const reply = await client.command(`NOOP ${"n".repeat(3000)}`);
    expect(reply?.code).toBe(421);
    await client.closed;
  });
});

describe("SMTP smuggling and pipelining", () => {
  // Each payload ends the DATA early under a lenient reading of <LF>.<LF>-style terminators, then starts a
  // second transaction (the attack of CVE-2023-51764/-51765/-51766): smtpsmug's bad endings (github.com/hannob/smtpsmug),
  // sent after the 354 as a client that waits for it would. Only <CRLF>.<CRLF> ends DATA here.
  test.each([
    ["lflf", "\n.\n"],
    ["crcr", "\r.\r"],
    ["crlf", "\r.\n"],
    ["lfcr", "\n.\r"],
    ["lfcrlf", "\n.\r\n"],
    ["crlflf", "\r\n.\n"],
    ["crcrlf", "\r.\r\n"],
    ["crlfcr", "\r\n.\r"],
    ["nullbefore", "\r\n\x00.\r\n"],
    ["nullafter", "\r\n.\x00\r\n"],
  ])("smtpsmug's %s ending never produces a second message", async (_name, terminator) => {
    const inbox = await createInbox();
    const smuggled = `MAIL FROM:<ceo@${app.config.managedDomain}>\r\nRCPT TO:<${inbox.address}>\r\nDATA\r\nSubject: smuggled\r\n\r\nwire the money\r\n`;
    const { client } = await RawSmtpClient.connect(smtp.port);
    await client.command("EHLO smuggler.example");
    const data = `Subject: outer\r\n\r\nhello${terminator}${smuggled}`;
    const replies = await transaction(client, { from: sender(), to: [inbox.address], data });
    expect(replies.message?.code).toBe(250);
    // Nothing else answers: the smuggled commands were message content, not commands (their replies would come
    // before these).
    expect(await client.command("NOOP")).toEqual({ code: 250, text: expect.stringMatching(/OK/i) });
    expect((await client.command("QUIT"))?.code).toBe(221);
    client.destroy();
    const [stored] = await storedMessages(inbox.id);
    expect(stored!.subject).toBe("outer");
    expect(stored!.text).toContain("wire the money");
    expect(await storedCount(inbox.id)).toBe(1);
  });

  test("a message sent before the 354 is refused with 554 5.5.0, the connection closed and nothing stored", async () => {
    const inbox = await createInbox();
    const from = sender();
    const { client } = await RawSmtpClient.connect(smtp.port);
    await client.command("EHLO bulk.example");
    client.write(`MAIL FROM:<${from}>\r\nRCPT TO:<${inbox.address}>\r\nDATA\r\n${message("too soon")}.\r\n`);
    // smtp-server has written the 354 when the message is seen to have come before it: the message is what is refused.
    expect(await replyCodes(client, 3)).toEqual([250, 250, 354]);
    expect(await client.reply()).toEqual({ code: 554, text: "5.5.0 Error: SMTP protocol synchronization" });
    expect(await client.reply()).toBeNull();
    await client.closed;
    expect(await rawCount(from)).toBe(0);
  });

  test("smtpsmug's pipelining test: a second transaction pipelined with its message after the first message is refused, the first kept", async () => {
    const inbox = await createInbox();
    const from = sender();
    const { client } = await RawSmtpClient.connect(smtp.port);
    await client.command("EHLO smuggler.example");
    expect((await client.command(`MAIL FROM:<${from}>`))?.code).toBe(250);
    expect((await client.command(`RCPT TO:<${inbox.address}>`))?.code).toBe(250);
    expect((await client.command("DATA"))?.code).toBe(354);
    client.write(`${message("mail 1/2")}.\r\nMAIL FROM:<${from}>\r\nRCPT TO:<${inbox.address}>\r\nDATA\r\n${message("mail 2/2")}.\r\n`);
    expect(await replyCodes(client, 5)).toEqual([250, 250, 250, 354, 554]);
    await client.closed;
    const [stored] = await storedMessages(inbox.id);
    expect(stored!.subject).toBe("mail 1/2");
    expect(await storedCount(inbox.id)).toBe(1);
  });

  test("PIPELINING as RFC 2920 allows it is served: MAIL, RCPT and DATA in one write, the message after the 354, the next transaction behind the final dot", async () => {
    const inbox = await createInbox();
    const from = sender();
    const { client } = await RawSmtpClient.connect(smtp.port);
    expect((await client.command("EHLO pipeliner.example"))?.text).toMatch(/^PIPELINING$/m);
    const group = `MAIL FROM:<${from}>\r\nRCPT TO:<${inbox.address}>\r\nDATA\r\n`;
    client.write(group);
    expect(await replyCodes(client, 3)).toEqual([250, 250, 354]);
    // The message and its final dot, and behind them in the same write the next transaction's commands.
    client.write(`${message("first")}.\r\n${group}`);
    expect(await replyCodes(client, 4)).toEqual([250, 250, 250, 354]);
    client.write(`${message("second")}.\r\nQUIT\r\n`);
    expect(await replyCodes(client, 2)).toEqual([250, 221]);
    await eventually(async () => ((await storedCount(inbox.id)) === 2 ? true : undefined));
  });
});

describe("durable acceptance", () => {
  test("answers 451 when the raw message cannot be committed, so the sender keeps it and retries", async () => {
    const inbox = await createInbox();
    const from = sender();
    // A real PostgreSQL failure on the commit of this one sender's mail: a trigger that refuses its row.
    const fn = `refuse_${uniqueName("raw").replace(/-/g, "_")}`;
    const conn = app.db.fork().getConnection();
    await conn.execute(`create function ${fn}() returns trigger language plpgsql as $$ begin
      if new.mail_from = '${from}' then raise exception 'disk full'; end if; return new; end $$`);
    await conn.execute(`create trigger ${fn} before insert on inbound_raw_messages for each row execute function ${fn}()`);
    try {
      const refused = await sendRaw(smtp.port, { from, to: [inbox.address], data: message("unlucky") });
      expect([refused.message?.code, refused.message?.text]).toEqual([451, expect.stringMatching(/^4\.3\.0 /)]);
    } finally {
      await conn.execute(`drop trigger ${fn} on inbound_raw_messages`);
      await conn.execute(`drop function ${fn}()`);
    }
    const retried = await sendRaw(smtp.port, { from, to: [inbox.address], data: message("lucky") });
    expect(retried.message?.code).toBe(250);
    await eventually(async () => ((await storedCount(inbox.id)) === 1 ? true : undefined));
  });
});
