// messages.extracted as stored: a reply or safe text equal to the message's text trimmed is kept as null and put back
// when the message is read. Mail received over SMTP must read, through /v1, Connect and MCP, byte for byte as the same
// row with both texts in full (how rows stored before this are, and still read).
import { toBinary } from "@bufbuild/protobuf";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { GetThreadResponseSchema, ThreadService } from "../../gen/mailbox/v1/thread_service_pb.js";
import { Message } from "../../src/db/entities/index.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { storeInbound } from "../support/mail-fixtures.js";
import { sendRaw } from "../support/smtp-client.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

let app: TestApp;
let smtp: SmtpRole;
const clients: Client[] = [];

beforeAll(async () => {
  app = await startTestApp();
  smtp = await app.startSmtp();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await app?.stop();
});

async function tenantWithInbox(): Promise<{ tenant: Tenant; inbox: { id: string; address: string }; mcp: Client }> {
  const tenant = await app.createTenant();
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("stored"), displayName: "Stored" } });
  expect(res.status).toBe(201);
  const mcp = new Client({ name: "extracted-storage-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL("/mcp", app.baseUrl), { requestInit: { headers: { "x-api-key": tenant.key } } }));
  clients.push(mcp);
  return { tenant, inbox: res.body, mcp };
}

/** A thread as each protocol answers it, in its bytes: the /v1 body, the Connect message, the MCP tool's result. */
async function readThread(tenant: Tenant, mcp: Client, threadId: string) {
  const res = await fetch(`${app.baseUrl}/v1/threads/${threadId}`, { headers: { "x-api-key": tenant.key } });
  expect(res.status).toBe(200);
  const connect = await tenant.connect(ThreadService).getThread({ threadId });
  const tool = (await mcp.callTool({ name: "get_thread", arguments: { threadId } })) as CallToolResult;
  expect(tool.isError).toBeFalsy();
  return {
    json: await res.text(),
    connect: Buffer.from(toBinary(GetThreadResponseSchema, connect)).toString("base64"),
    // The envelope's nonce is fresh for every result.
    mcp: JSON.stringify(tool).replaceAll(/nonce=\\"[0-9a-f]{32}\\"/g, 'nonce=\\"…\\"'),
  };
}

/** The extracted JSON and text of a message as its row holds them. */
async function storedRow(messageId: string): Promise<{ text: string; extracted: Record<string, unknown> }> {
  const [row] = await app.db.sql.query<{ text: string; extracted: Record<string, unknown> }>(`select text, extracted from messages where id = $1`, [messageId]);
  return row!;
}

async function setExtracted(messageId: string, extracted: unknown): Promise<void> {
  await app.db.sql.query(`update messages set extracted = $1::jsonb where id = $2`, [JSON.stringify(extracted), messageId]);
}

const crlf = (lines: string[]) => lines.join("\r\n") + "\r\n";

/** Raw mail exercising the texts: CRLF lines, blank and indented lines around the body, HTML only, a cut safe text. */
function mailOf(to: string, subject: string, body: { text?: string; html?: string }): string {
  const head = [`From: Sender <sender@example.net>`, `To: <${to}>`, `Subject: ${subject}`, `Message-ID: <${uniqueName("m")}@example.net>`, "MIME-Version: 1.0"];
  if (body.text !== undefined && body.html !== undefined) {
    return crlf([
      ...head,
      'Content-Type: multipart/alternative; boundary="b1"',
      "",
      "--b1",
      "Content-Type: text/plain; charset=utf-8",
      "",
      body.text,
      "--b1",
      "Content-Type: text/html; charset=utf-8",
      "",
      body.html,
      "--b1--",
    ]);
  }
  const [type, content] = body.html !== undefined ? ["text/html", body.html] : ["text/plain", body.text!];
  return crlf([...head, `Content-Type: ${type}; charset=utf-8`, "Content-Transfer-Encoding: 8bit", "", content]);
}

describe("messages.extracted", () => {
  test("a row stored with its texts in full (before this change) reads exactly as before", async () => {
    const { tenant, inbox, mcp } = await tenantWithInbox();
    const text = "\r\n  Hello agent,\r\n  your code is 123 456.  \r\n\r\n";
    const trimmed = text.trim();
    const full = { replyText: trimmed, codes: [{ value: "123456", confidence: 0.9, context: "your code is 123 456." }], links: [], safeText: trimmed, warnings: [], risk: "low" };
    const current = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: inbox.id, text });
    await setExtracted(current.messageId, full);
    // Stored before the safety analysis: no safeText, warnings or risk.
    const older = await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: inbox.id, text, threadId: current.threadId });
    await setExtracted(older.messageId, { replyText: trimmed, codes: [], links: [] });

    const res = await tenant.request("GET", `/v1/threads/${current.threadId}`);
    const byId = new Map(res.body.messages.map((m: { id: string }) => [m.id, m]));
    expect((byId.get(current.messageId) as { extracted: unknown }).extracted).toEqual(full);
    expect((byId.get(older.messageId) as { extracted: unknown }).extracted).toEqual({ replyText: trimmed, codes: [], links: [], warnings: [] });
    const viaConnect = await tenant.connect(ThreadService).getThread({ threadId: current.threadId });
    const connected = viaConnect.messages.find((m) => m.id === current.messageId)!;
    expect(connected.extracted).toMatchObject({ replyText: trimmed, safeText: trimmed, risk: "low" });
    const olderConnected = viaConnect.messages.find((m) => m.id === older.messageId)!;
    expect(olderConnected.extracted?.replyText).toBe(trimmed);
    expect(olderConnected.extracted?.safeText).toBeUndefined();
    const tool = (await mcp.callTool({ name: "get_thread", arguments: { threadId: current.threadId } })) as CallToolResult;
    expect((tool.structuredContent as { messages: unknown[] }).messages).toEqual(res.body.messages);
  });

  test("mail received over SMTP keeps the texts equal to its text trimmed out of the row, and reads byte for byte as with them in full", async () => {
    const { tenant, inbox, mcp } = await tenantWithInbox();
    const longText = Array.from({ length: 4000 }, (_, i) => `line ${i} of a long message that goes past the safe text's limit`).join("\r\n");
    const mails = [
      // Plain text: CRLF lines, blank lines and trailing spaces around it.
      { subject: "plain", body: { text: "\r\n\r\nHello agent,\r\n\tthe report is ready.   \r\n\r\n" } },
      // A reply: its reply text is the new part only, its safe text the whole.
      { subject: "reply", body: { text: "Thanks, that works.\r\n\r\nOn Mon, 2 Nov 2026, Bob <bob@example.net> wrote:\r\n> Does it work?\r\n" } },
      // HTML only: its text is made from the HTML.
      { subject: "html only", body: { html: "<html><body><p>Hello from <b>HTML</b> only.</p><p>Second paragraph.</p></body></html>" } },
      // Text and HTML: the safe text is read from the HTML, not the text.
      { subject: "alternative", body: { text: "Plain version.", html: "<p>HTML version with a <a href=\"https://example.com/x\">link</a>.</p>" } },
      // Longer than the safe text's limit (200,000 characters): the safe text is cut, so it is kept in full.
      { subject: "long", body: { text: longText } },
    ];
    for (const mail of mails) {
      const replies = await sendRaw(smtp.port, { from: "sender@example.net", to: [inbox.address], data: mailOf(inbox.address, mail.subject, mail.body) });
      expect(replies.message?.code).toBe(250);
    }
    const rows = await eventually(async () => {
      const found = await app.db.fork().find(Message, { inboxId: inbox.id });
      return found.length === mails.length && found.every((m) => m.extracted) ? found : undefined;
    });
    const stored = new Map(await Promise.all(rows.map(async (m) => [m.subject, { id: m.id, threadId: m.threadId, ...(await storedRow(m.id)) }] as const)));

    // What was left out: the texts equal to the text trimmed (the reply's safe text, the alternative's reply text),
    // not the texts cut by a limit.
    expect(stored.get("plain")!.extracted).toMatchObject({ replyText: null, safeText: null });
    expect(stored.get("html only")!.extracted).toMatchObject({ replyText: null, safeText: null });
    expect(stored.get("reply")!.extracted).toMatchObject({ replyText: "Thanks, that works.", safeText: null });
    expect(stored.get("alternative")!.extracted).toMatchObject({ replyText: null, safeText: "HTML version with a link [https://example.com/x]." });
    const long = stored.get("long")!;
    for (const cut of [long.extracted["replyText"], long.extracted["safeText"]]) expect((cut as string).length).toBeLessThan(long.text.trim().length);

    for (const [subject, row] of stored) {
      const asStored = await readThread(tenant, mcp, row.threadId);
      // The same row with its texts in full, as it was stored before this change.
      const trimmed = row.text.trim();
      const { replyText, safeText } = row.extracted;
      await setExtracted(row.id, { ...row.extracted, replyText: replyText ?? trimmed, safeText: safeText ?? trimmed });
      const inFull = await readThread(tenant, mcp, row.threadId);
      // Compared whole, not diffed: a long message's answers are hundreds of kilobytes.
      for (const protocol of ["json", "connect", "mcp"] as const) expect(asStored[protocol] === inFull[protocol], `${subject} over ${protocol}`).toBe(true);
      const message = JSON.parse(asStored.json).messages[0];
      expect(message.extracted.safeText, subject).toBe(safeText ?? trimmed);
      expect(message.extracted.replyText, subject).toBe(replyText ?? trimmed);
    }
  });
});
