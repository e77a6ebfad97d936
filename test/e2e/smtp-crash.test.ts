// Durable acceptance across a crash: the smtp role runs as its own process (`mailbox serve --role smtp`), is
// killed with SIGKILL right after it answers 250, and the message is still processed once smtp runs again.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { InboundRawMessage, Message } from "../../src/db/entities/index.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { recordingPorts } from "../support/inbound-ports.js";
import { RawSmtpClient, transaction } from "../support/smtp-client.js";

let app: TestApp;
let dataDir: string;
let child: ChildProcess | undefined;

beforeAll(async () => {
  app = await startTestApp();
  dataDir = await mkdtemp(join(tmpdir(), "mailbox-smtp-crash-"));
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await app?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** `mailbox serve --role smtp` on the test database; resolves with its SMTP port once it listens. */
async function serveSmtp(): Promise<number> {
  const env = {
    ...process.env,
    DATABASE_URL: inject("databaseUrl"),
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_TASK_QUEUE: app.config.temporalTaskQueue,
    MANAGED_DOMAIN: app.config.managedDomain,
    SMTP_PORT: "0",
    DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
  };
  child = spawn(process.execPath, ["src/cli/mailbox.js", "serve", "--role", "smtp"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const summary = await new Promise<{ smtp: string; roles: string[] }>((resolve, reject) => {
    child!.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      const line = stdout.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line));
    });
    child!.once("exit", (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  expect(summary.roles).toEqual(["smtp"]);
  return Number(summary.smtp.split(":").pop());
}

test("a message answered 250 by a process killed right after is processed when smtp runs again", async () => {
  const tenant = await app.createTenant();
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("crash"), displayName: "Crash" } });
  const inbox = res.body as { id: string; address: string };
  const port = await serveSmtp();

  const { client } = await RawSmtpClient.connect(port);
  await client.command("EHLO survivor.example");
  const replies = await transaction(client, {
    from: "survivor@example.org",
    to: [inbox.address],
    data: "From: survivor@example.org\r\nSubject: still here\r\nMessage-ID: <crash-1@example.org>\r\n\r\naccepted, then the server died\r\n",
  });
  child!.kill("SIGKILL");
  expect(replies.message?.code).toBe(250);
  const [, code] = await once(child!, "exit");
  expect(code).toBe("SIGKILL");
  client.destroy();

  // Committed before the 250, not processed before the kill.
  const rawId = /queued as ([0-9a-f-]{36})/.exec(replies.message!.text)![1]!;
  expect(await app.db.fork().findOne(InboundRawMessage, rawId)).toMatchObject({ status: "pending", rcptTo: [inbox.address] });
  expect(await app.db.fork().count(Message, { inboxId: inbox.id })).toBe(0);

  const ports = recordingPorts();
  await app.startSmtp({ ...ports, sweeper: { intervalMs: 250, staleAfterMs: 5000 } });
  const stored = await eventually(async () => (await app.db.fork().findOne(Message, { inboxId: inbox.id })) ?? undefined);
  expect(stored).toMatchObject({
    rawId,
    subject: "still here",
    internetMessageId: "<crash-1@example.org>",
    text: "accepted, then the server died\n",
  });
  expect(stored.inboundSecurity).toMatchObject({ remoteIp: "127.0.0.1", helo: "survivor.example" });
  expect(await app.db.fork().count(InboundRawMessage, { id: rawId })).toBe(0);
  expect(ports.enqueued).toContainEqual(expect.objectContaining({ messageId: stored.id, inTransaction: true }));
}, 120_000);
