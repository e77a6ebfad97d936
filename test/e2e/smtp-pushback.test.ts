// Pushing back as a real MTA does: connections per client address (each client on its own 127.x.y.z), refused
// recipients per session (slowed past a few, the session ended at the limit, so probing for addresses is slow and
// bounded), and new transactions refused with 451 4.3.1 at MAIL FROM while accepted mail waits for processing
// beyond its bound, before the sender transmits anything. A message past the in-memory size is spooled to disk and
// committed in chunks, and comes out intact.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { holdInbox } from "../support/hold-inbox.js";
import { RawSmtpClient, sendRaw, transaction } from "../support/smtp-client.js";

const REFUSAL_DELAY_MS = 300;

let app: TestApp;
let smtp: SmtpRole;
let tenant: Tenant;

beforeAll(async () => {
  app = await startTestApp({
    SMTP_MAX_CONNECTIONS_PER_CLIENT: "2",
    SMTP_MAX_REFUSED_RECIPIENTS: "4",
    SMTP_REFUSAL_DELAY_AFTER: "2",
    SMTP_REFUSAL_DELAY_MS: String(REFUSAL_DELAY_MS),
    INBOUND_MAX_BACKLOG: "2",
  });
  smtp = await app.startSmtp();
  tenant = await app.createTenant({ managedLimit: 20 });
});
afterAll(() => app?.stop());

async function createInbox(): Promise<{ id: string; address: string }> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("push"), displayName: "Pushback" } });
  expect(res.status).toBe(201);
  return res.body;
}

const storedCount = async (inboxId: string) =>
  (await app.db.sql.query<{ n: number }>(`select count(*)::int as n from messages where inbox_id = $1`, [inboxId]))[0]!.n;

/** A client from its own loopback address, past EHLO. */
async function clientFrom(address: string): Promise<{ client: RawSmtpClient; greeting: number | undefined }> {
  const { client, greeting } = await RawSmtpClient.connect(smtp.port, "127.0.0.1", address);
  if (greeting?.code === 220) await client.command("EHLO pushback.example");
  return { client, greeting: greeting?.code };
}

describe("per client", () => {
  test("refuses a third connection from one address with 421 4.7.0, not another address's, and takes it once one closes", async () => {
    const first = await clientFrom("127.0.3.1");
    const second = await clientFrom("127.0.3.1");
    expect([first.greeting, second.greeting]).toEqual([220, 220]);

    const third = await RawSmtpClient.connect(smtp.port, "127.0.0.1", "127.0.3.1");
    expect([third.greeting?.code, third.greeting?.text]).toEqual([421, "4.7.0 too many connections from your address, try again later"]);
    await third.client.closed;
    const elsewhere = await clientFrom("127.0.3.2");
    expect(elsewhere.greeting).toBe(220);

    await first.client.quit();
    await first.client.closed;
    // The server counts the session closed once it has seen the close: a new one is taken from then on.
    const again = await eventually(async () => {
      const attempt = await clientFrom("127.0.3.1");
      if (attempt.greeting === 220) return attempt;
      await attempt.client.closed;
      return undefined;
    });
    await Promise.all([second.client.quit(), elsewhere.client.quit(), again.client.quit()]);
  });

  test("answers refused recipients past the second only after the delay, and ends the session at the fourth with 421 4.7.0", async () => {
    const inbox = await createInbox();
    const { client } = await clientFrom("127.0.3.3");
    expect((await client.command("MAIL FROM:<prober@example.org>"))?.code).toBe(250);
    const unknown = () => `${uniqueName("probe")}@${app.config.managedDomain}`;

    for (let i = 1; i <= 3; i++) {
      const started = Date.now();
      const refused = await client.command(`RCPT TO:<${unknown()}>`);
      expect([refused?.code, refused?.text]).toEqual([550, expect.stringMatching(/^5\.1\.1 /)]);
      if (i === 3) expect(Date.now() - started).toBeGreaterThanOrEqual(REFUSAL_DELAY_MS - 5);
      // An admitted recipient in between is no refusal.
      if (i === 1) expect((await client.command(`RCPT TO:<${inbox.address}>`))?.code).toBe(250);
    }
    const last = await client.command(`RCPT TO:<${unknown()}>`);
    expect([last?.code, last?.text]).toEqual([421, "4.7.0 too many refused recipients, closing connection"]);
    await client.closed;

    // Counted per session: the next session starts from nothing.
    const next = await sendRaw(smtp.port, { from: "prober@example.org", to: [unknown(), inbox.address], data: "Subject: hi\r\n\r\nhi\r\n" });
    expect(next.rcpt.map((r) => r?.code)).toEqual([550, 250]);
    expect(next.message?.code).toBe(250);
    await eventually(async () => ((await storedCount(inbox.id)) === 1 ? true : undefined));
  });
});

describe("backlog", () => {
  test("refuses MAIL FROM with 451 4.3.1 while accepted mail waiting for processing is at its bound, and accepts again once it drains", async () => {
    const inbox = await createInbox();
    const hold = await holdInbox(app.db, inbox.id);
    try {
      // Nothing else waits for processing (MAIL FROM would already be refused otherwise).
      const mailFrom = async () => {
        const { client } = await clientFrom("127.0.3.4");
        const reply = await client.command("MAIL FROM:<s@example.org>");
        await client.quit();
        return reply;
      };
      expect((await mailFrom())?.code).toBe(250);
      for (const n of [1, 2]) {
        const replies = await sendRaw(smtp.port, { from: "s@example.org", to: [inbox.address], data: `Subject: ${n}\r\n\r\nheld ${n}\r\n` });
        expect(replies.message?.code).toBe(250);
      }
      const refused = await mailFrom();
      expect([refused?.code, refused?.text]).toEqual([451, "4.3.1 too much mail waiting to be processed here, try again later"]);
    } finally {
      await hold.release();
    }
    await eventually(async () => ((await storedCount(inbox.id)) === 2 ? true : undefined));
    const accepted = await eventually(async () => {
      const replies = await sendRaw(smtp.port, { from: "s@example.org", to: [inbox.address], data: "Subject: 3\r\n\r\nafter\r\n" });
      return replies.mail?.code === 250 ? replies : undefined;
    });
    expect(accepted.message?.code).toBe(250);
    await eventually(async () => ((await storedCount(inbox.id)) === 3 ? true : undefined));
  });
});

describe("large messages", () => {
  test("a message past the in-memory size is spooled, committed in chunks, and stored byte for byte", async () => {
    const inbox = await createInbox();
    const content = randomBytes(3 * 1024 * 1024);
    const base64 = content.toString("base64").replace(/.{76}/g, "$&\r\n");
    const data =
      `From: big@example.org\r\nTo: ${inbox.address}\r\nSubject: large\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n` +
      `--b\r\nContent-Type: text/plain\r\n\r\nattached\r\n--b\r\nContent-Type: application/octet-stream; name=big.bin\r\n` +
      `Content-Transfer-Encoding: base64\r\n\r\n${base64}\r\n--b--\r\n`;
    const hold = await holdInbox(app.db, inbox.id);
    let rawId: string;
    try {
      const { client } = await clientFrom("127.0.3.5");
      const replies = await transaction(client, { from: "big@example.org", to: [inbox.address], data });
      await client.quit();
      expect(replies.message?.code).toBe(250);
      rawId = /queued as ([0-9a-f-]{36})/.exec(replies.message!.text)![1]!;
      // Committed before the 250 as chunks of the row, whose own raw is empty.
      const [raw] = await app.db.sql.query<{ size: number; inline: number; chunks: number; chunked: number }>(
        `select size, length(raw) as inline, (select count(*)::int from inbound_raw_chunks where raw_message_id = r.id) as chunks,
                (select sum(length(data))::int from inbound_raw_chunks where raw_message_id = r.id) as chunked
           from inbound_raw_messages r where id = $1`,
        [rawId],
      );
      expect(raw).toEqual({ size: Buffer.byteLength(data), inline: 0, chunks: Math.ceil(Buffer.byteLength(data) / (256 * 1024)), chunked: Buffer.byteLength(data) });
    } finally {
      await hold.release();
    }

    const [stored] = await eventually(async () => {
      const rows = await app.db.sql.query<{ id: string; content: Buffer }>(
        `select m.id, a.content from messages m join attachments a on a.message_id = m.id where m.inbox_id = $1`,
        [inbox.id],
      );
      return rows.length > 0 ? rows : undefined;
    });
    expect(stored!.content.equals(content)).toBe(true);
    // The raw row and its chunks are gone with it.
    const [left] = await app.db.sql.query<{ rows: number; chunks: number }>(
      `select (select count(*)::int from inbound_raw_messages where id = $1) as rows,
              (select count(*)::int from inbound_raw_chunks where raw_message_id = $1) as chunks`,
      [rawId],
    );
    expect(left).toEqual({ rows: 0, chunks: 0 });
  });
});
