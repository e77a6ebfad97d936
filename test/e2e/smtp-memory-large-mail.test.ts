// Memory under large mail, from outside (issue 18 item 9): the smtp role as its own process (`mailbox serve --role
// smtp`, default configuration) takes 40 concurrent sessions from 40 client addresses, each sending two 9 MB messages.
// The whole service's memory — the process's PSS and that of the PostgreSQL backends serving it, read from /proc as
// an operator would — grows by at most 250 MB while the load runs and the messages are stored, and is back within
// 100 MB of the start a minute after the last one is stored. Every message answered 250 is stored, once.
//
// Before the fix it grew by ~600 MB and stayed there: each 9 MB message was read back whole, copied to a parser
// thread, parsed whole, and large buffers freed by one thread stayed in glibc's heaps.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { serviceMemory } from "../support/process-memory.js";
import { RawSmtpClient, transaction } from "../support/smtp-client.js";
import { serveSmtp, type SmtpProcess } from "../support/smtp-process.js";

const MB = 1_000_000;
const CLIENTS = 40;
const MESSAGES_PER_CLIENT = 2;
/** Growth of the whole service while the load runs and is stored, at most. */
const GROWTH_BOUND = 250 * MB;
/** A minute after the last message is stored, the service is back within this of where it started. */
const SETTLED_BOUND = 100 * MB;
const SETTLE_MS = 60_000;
/** However slow the machine, the load ends: a message not answered or not stored by then fails the test. */
const LOAD_DEADLINE_MS = 600_000;

let database: FileDatabase;
let app: TestApp;
let dataDir: string;
let smtp: SmtpProcess;
let inbox: { id: string; address: string };

beforeAll(async () => {
  // Its role's sweeper adopts pending raw mail of its whole database, and other files' would adopt its 9 MB
  // messages (and count in its backends' memory): a database of its own.
  database = await createFileDatabase();
  app = await startTestApp({ DATABASE_URL: database.url });
  dataDir = await mkdtemp(join(tmpdir(), "mailbox-large-mail-"));
  const tenant = await app.createTenant();
  inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("large"), displayName: "Large" } })).body;
  smtp = await serveSmtp(app, dataDir);
});
afterAll(async () => {
  await smtp?.kill("SIGKILL");
  await app?.stop();
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** A 9 MB body: a short text part and a base64 attachment of random (incompressible) bytes in 76-character lines. */
const BODY = (() => {
  const base64 = randomBytes(6_750_000).toString("base64").replace(/.{76}/g, "$&\r\n");
  return Buffer.from(
    `Content-Type: multipart/mixed; boundary=large\r\n\r\n--large\r\nContent-Type: text/plain\r\n\r\nsee the attachment\r\n` +
      `--large\r\nContent-Type: application/octet-stream; name=blob.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64}\r\n--large--\r\n`,
  );
})();

function header(messageId: string): Buffer {
  return Buffer.from(`From: large@example.org\r\nTo: ${inbox.address}\r\nSubject: large\r\nMessage-ID: ${messageId}\r\nMIME-Version: 1.0\r\n`);
}

/** One session from its own address sending its messages in turn; every one must be answered 250. */
async function session(localAddress: string, messageIds: readonly string[]): Promise<void> {
  const { client, greeting } = await RawSmtpClient.connect(smtp.port, "127.0.0.1", localAddress);
  client.replyTimeoutMs = LOAD_DEADLINE_MS;
  try {
    expect(greeting?.code).toBe(220);
    expect((await client.command("EHLO large.example"))?.code).toBe(250);
    for (const messageId of messageIds) {
      const replies = await transaction(client, { from: "large@example.org", to: [inbox.address], data: [header(messageId), BODY] });
      expect(replies.message?.code, `${messageId}: ${replies.message?.text ?? JSON.stringify(replies)}`).toBe(250);
    }
  } finally {
    await client.quit();
  }
}

async function storedOf(messageIds: readonly string[]): Promise<{ rows: number; distinct: number }> {
  const [counts] = await app.db.sql.query<{ rows: number; distinct: number }>(
    `select count(*)::int as rows, count(distinct internet_message_id)::int as distinct from messages
      where inbox_id = $1 and internet_message_id = any($2)`,
    [inbox.id, messageIds],
  );
  return counts!;
}

/** The smtp process's and its backends' share at the highest reading, for the log. */
let peakSplit = { process: 0, backends: 0 };

async function servicePss(): Promise<number> {
  const { process, backends } = await serviceMemory(smtp.child.pid!, app.db.sql);
  if (process + backends > peakSplit.process + peakSplit.backends) peakSplit = { process, backends };
  return process + backends;
}

/** A reading once two in a row, a second apart, agree within 5 MB (bounded: garbage collection moves it). */
async function settledPss(): Promise<number> {
  let last = await servicePss();
  for (let i = 0; i < 20; i++) {
    await sleep(1000);
    const now = await servicePss();
    if (Math.abs(now - last) < 5 * MB) return now;
    last = now;
  }
  return last;
}

test("40 sessions sending two 9 MB messages each: the service grows by at most 250 MB and is back within 100 MB a minute later; every 250 is stored once", async () => {
  // Warm: one small message through the whole path, so threads and pools exist before the start is read.
  const warm = `<${uniqueName("warm")}@large.example>`;
  const { client: c } = await RawSmtpClient.connect(smtp.port);
  await c.command("EHLO warm.example");
  await transaction(c, { from: "large@example.org", to: [inbox.address], data: [header(warm), Buffer.from("\r\nwarm\r\n")] });
  await c.quit();
  await eventually(async () => ((await storedOf([warm])).rows === 1 ? true : undefined), 60_000);
  const start = await settledPss();
  peakSplit = { process: 0, backends: 0 };

  let peak = start;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await servicePss());
      await sleep(200);
    }
  })();
  const messageIds = Array.from({ length: CLIENTS }, (_, i) =>
    Array.from({ length: MESSAGES_PER_CLIENT }, (_, k) => `<${uniqueName(`c${i}-${k}`)}@large.example>`),
  );
  let stored: { rows: number; distinct: number };
  try {
    await Promise.all(messageIds.map((ids, i) => session(`127.0.1.${i + 1}`, ids)));
    stored = await eventually(async () => {
      const counts = await storedOf(messageIds.flat());
      return counts.rows >= CLIENTS * MESSAGES_PER_CLIENT ? counts : undefined;
    }, LOAD_DEADLINE_MS);
  } finally {
    sampling = false;
    await sampler;
  }
  expect(stored).toEqual({ rows: CLIENTS * MESSAGES_PER_CLIENT, distinct: CLIENTS * MESSAGES_PER_CLIENT });

  const storedAt = Date.now();
  let after = await servicePss();
  while (after - start > SETTLED_BOUND && Date.now() - storedAt < SETTLE_MS) {
    await sleep(1000);
    after = await servicePss();
  }
  console.log(
    `whole service PSS: start ${(start / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB (+${((peak - start) / MB).toFixed(0)}; ` +
      `process ${(peakSplit.process / MB).toFixed(0)}, backends ${(peakSplit.backends / MB).toFixed(0)}), ` +
      `${((Date.now() - storedAt) / 1000).toFixed(0)} s after the last was stored ${(after / MB).toFixed(0)} MB (+${((after - start) / MB).toFixed(0)})`,
  );
  expect(peak - start).toBeLessThanOrEqual(GROWTH_BOUND);
  expect(after - start).toBeLessThanOrEqual(SETTLED_BOUND);
}, 3 * LOAD_DEADLINE_MS);
