// Durable acceptance across a crash: the smtp role runs as its own process (`mailbox serve --role smtp`), is
// killed with SIGKILL right after it answers 250, and the message is still processed once smtp runs again.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { InboundRawMessage, Message } from "../../src/db/entities/index.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { eventsOf, webhookEndpoint } from "../support/inbound-ports.js";
import { RawSmtpClient, transaction } from "../support/smtp-client.js";
import { serveSmtp, type SmtpProcess } from "../support/smtp-process.js";

let database: FileDatabase;
let app: TestApp;
let dataDir: string;
let smtpProcess: SmtpProcess | undefined;

beforeAll(async () => {
  // Endpoints at 127.0.0.1 are allowed: events are written for them (their attempts fail, which is not tested here).
  // The restarted role's sweeper adopts pending raw mail of its whole database: this file's own.
  database = await createFileDatabase();
  app = await startTestApp({ WEBHOOK_ALLOW_HOSTS: "127.0.0.1", DATABASE_URL: database.url });
  dataDir = await mkdtemp(join(tmpdir(), "mailbox-smtp-crash-"));
});
afterAll(async () => {
  await smtpProcess?.kill("SIGKILL");
  await app?.stop();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

test("a message answered 250 by a process killed right after is processed when smtp runs again", async () => {
  const tenant = await app.createTenant();
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("crash"), displayName: "Crash" } });
  const inbox = res.body as { id: string; address: string };
  await webhookEndpoint(tenant, "https://127.0.0.1/crash-events");
  smtpProcess = await serveSmtp(app, dataDir);

  const { client } = await RawSmtpClient.connect(smtpProcess.port);
  await client.command("EHLO survivor.example");
  const replies = await transaction(client, {
    from: "survivor@example.org",
    to: [inbox.address],
    data: "From: survivor@example.org\r\nSubject: still here\r\nMessage-ID: <crash-1@example.org>\r\n\r\naccepted, then the server died\r\n",
  });
  const killed = smtpProcess.kill("SIGKILL");
  expect(replies.message?.code).toBe(250);
  expect(await killed).toBe("SIGKILL");
  client.destroy();

  // Committed before the 250, not processed before the kill.
  const rawId = /queued as ([0-9a-f-]{36})/.exec(replies.message!.text)![1]!;
  expect(await app.db.fork().findOne(InboundRawMessage, rawId)).toMatchObject({ status: "pending", rcptTo: [inbox.address] });
  expect(await app.db.fork().count(Message, { inboxId: inbox.id })).toBe(0);

  await app.startSmtp({ sweeper: { intervalMs: 250, staleAfterMs: 5000 } });
  const stored = await eventually(async () => (await app.db.fork().findOne(Message, { inboxId: inbox.id })) ?? undefined);
  expect(stored).toMatchObject({
    rawId,
    subject: "still here",
    internetMessageId: "<crash-1@example.org>",
    text: "accepted, then the server died\n",
  });
  expect(stored.inboundSecurity).toMatchObject({ remoteIp: "127.0.0.1", helo: "survivor.example" });
  expect(await app.db.fork().count(InboundRawMessage, { id: rawId })).toBe(0);
  expect(await eventsOf(app, stored.id)).toEqual([expect.objectContaining({ data: expect.objectContaining({ inboxId: inbox.id }) })]);
}, 120_000);
