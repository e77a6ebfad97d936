// A message too large to keep in memory, end to end: spooled while it arrives, committed in chunks, read back in
// pieces and parsed as a stream with its base64 lines joined (src/mail/line-joiner.ts). Every stored field is what
// the sender sent: the text of a base64 text part, the HTML, each attachment's bytes, name and type, in order.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { Attachment, Message } from "../../src/db/entities/index.js";
import { SPOOL_AFTER_BYTES } from "../../src/inbound/raw-body.js";
import { RAW_CHUNK_BYTES } from "../../src/inbound/receive.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { sendRaw } from "../support/smtp-client.js";

let app: TestApp;
let smtp: SmtpRole;

beforeAll(async () => {
  app = await startTestApp();
  smtp = await app.startSmtp();
});
afterAll(async () => {
  await app?.stop();
});

const base64Lines = (bytes: Buffer, width: number) => bytes.toString("base64").replace(new RegExp(`.{${width}}`, "g"), "$&\r\n");

test("a message of several stored chunks keeps its text, HTML and every attachment's bytes", async () => {
  const tenant = await app.createTenant();
  const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("large"), displayName: "Large" } })).body;
  const text = `Grüße — the report is attached.\n${"a line of text that goes on\n".repeat(2000)}`;
  const html = `<p>Grüße</p>${"<p>more</p>".repeat(3000)}`;
  const large = randomBytes(2_400_000);
  const small = randomBytes(5000);
  const raw = Buffer.from(
    `From: sender@example.org\r\nTo: ${inbox.address}\r\nSubject: large\r\nMessage-ID: <${uniqueName("large")}@example.org>\r\nMIME-Version: 1.0\r\n` +
      `Content-Type: multipart/mixed; boundary="QUJD"\r\n\r\n` +
      `--QUJD\r\nContent-Type: multipart/alternative; boundary="alt"\r\n\r\n` +
      `--alt\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Lines(Buffer.from(text.replace(/\n/g, "\r\n")), 76)}\r\n` +
      `--alt\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Lines(Buffer.from(html), 64)}\r\n--alt--\r\n` +
      `--QUJD\r\nContent-Type: application/octet-stream; name="blob.bin"\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Lines(large, 76)}\r\n` +
      `--QUJD\r\nContent-Type: image/png; name="small.png"\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Lines(small, 72)}\r\n--QUJD--\r\n`,
  );
  // Spooled, and stored in several chunks of which the parser reads many pieces.
  expect(raw.length).toBeGreaterThan(Math.max(SPOOL_AFTER_BYTES, 10 * RAW_CHUNK_BYTES));
  const replies = await sendRaw(smtp.port, { from: "sender@example.org", to: [inbox.address], data: raw });
  expect(replies.message?.code).toBe(250);

  const message = await eventually(async () => (await app.db.fork().findOne(Message, { inboxId: inbox.id })) ?? undefined, 60_000);
  expect(message.parseProblem).toBeNull();
  expect(message.text).toBe(text);
  expect(message.html).toBe(html);
  const attachments = await app.db.fork().find(Attachment, { messageId: message.id }, { orderBy: { position: "asc" }, populate: ["content"] });
  expect(attachments.map((a) => [a.filename, a.contentType, a.size])).toEqual([
    ["blob.bin", "application/octet-stream", large.length],
    ["small.png", "image/png", small.length],
  ]);
  expect(Buffer.from(attachments[0]!.content).equals(large)).toBe(true);
  expect(Buffer.from(attachments[1]!.content).equals(small)).toBe(true);
}, 120_000);
