// A worker process killed (SIGKILL) in the middle of an SMTP transaction: the peer has the whole message but its
// reply never reaches the worker, so nothing is recorded. Once another worker runs, the attempt is retried (the
// heartbeat timeout tells Temporal the first one is gone): the recipient is delivered, the peer got at most two
// copies, both with the one Message-ID of the stored message. Never none.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { createDeliveryStarter } from "../../src/temporal/client.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { insertSubmission, submissionState } from "../support/outbound-fixtures.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

let database: FileDatabase;
let app: TestApp;
let sink: SmtpSink;
let dir: string;
let child: ChildProcess | undefined;

const ROOT = new URL("../../", import.meta.url).pathname;

beforeAll(async () => {
  [sink, database] = await Promise.all([startSmtpSink(), createFileDatabase()]);
  app = await startTestApp({ SMTP_ROUTES: `sink.test=127.0.0.1:${sink.port}`, DELIVERY_TIMEOUT_MS: "60000", DATABASE_URL: database.url });
  dir = await mkdtemp(join(tmpdir(), "mailbox-delivery-crash-"));
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await app?.stop();
  await sink?.stop();
  await database?.drop();
  await rm(dir, { recursive: true, force: true });
});

/**
 * A worker in its own process, built as the worker role builds it (createConfiguredWorker with this app's
 * configuration and task queue), on this file's own database.
 */
async function spawnWorker(): Promise<ChildProcess> {
  const bundle = join(dir, "workflows.js");
  await writeFile(bundle, inject("workflowBundleCode"));
  const script = join(dir, "worker.mts");
  await writeFile(
    script,
    `import { readFile } from "node:fs/promises";
import { loadConfig } from ${JSON.stringify(join(ROOT, "src/config.js"))};
import { openDatabase } from ${JSON.stringify(join(ROOT, "src/db/database.js"))};
import { createConfiguredWorker } from ${JSON.stringify(join(ROOT, "src/roles/worker.js"))};
const config = loadConfig(process.env);
const db = await openDatabase(config.databaseUrl, { poolMax: 2 });
const worker = await createConfiguredWorker(config, db, config.temporalAddress, { code: await readFile(${JSON.stringify(bundle)}, "utf8") });
const running = worker.run();
process.stdout.write("ready\\n");
await running;
`,
  );
  const env = {
    ...process.env,
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_TASK_QUEUE: app.config.temporalTaskQueue,
    MANAGED_DOMAIN: app.config.managedDomain,
    DATA_DIR: app.config.dataDir,
    SMTP_ROUTES: `sink.test=127.0.0.1:${sink.port}`,
    DELIVERY_TIMEOUT_MS: "60000",
    LOG_LEVEL: "warn",
  };
  const proc = spawn(process.execPath, ["--import", "tsx", script], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.setEncoding("utf8").on("data", (d: string) => d.includes("ready") && resolve());
    proc.once("exit", (code) => reject(new Error(`worker exited with ${code}: ${stderr}`)));
  });
  return proc;
}

test("a worker killed before the peer's reply to DATA leads to delivery with at most one duplicate, same Message-ID", async () => {
  const tenant = await app.createTenant();
  const to = `${uniqueName("frank")}@sink.test`;
  const s = await insertSubmission(app.db, {
    organizationId: tenant.organizationId,
    from: { email: `${uniqueName("agent")}@${app.config.managedDomain}` },
    to: [{ email: to }],
    withMessage: true,
  });
  // The peer takes the message and sits on its reply.
  sink.holdData(1, 60_000);
  child = await spawnWorker();
  await createDeliveryStarter(app.temporal, app.config.temporalTaskQueue).start({ submissionId: s.submissionId, organizationId: tenant.organizationId, inboxId: null });
  await eventually(async () => (sink.copiesFor(to).length === 1 ? true : undefined), 30_000);

  child.kill("SIGKILL");
  const [, signal] = await once(child, "exit");
  expect(signal).toBe("SIGKILL");
  child = undefined;
  const between = await submissionState(app.db, s.submissionId);
  expect(between.recipients[0]).toMatchObject({ status: "queued", attempts: 0 });
  expect(between.message?.deliveryStatus).toBe("queued");

  await app.startWorker();
  const state = await eventually(async () => {
    const x = await submissionState(app.db, s.submissionId);
    return x.status === "delivered" ? x : undefined;
  }, 45_000);
  expect(state.recipients[0]).toMatchObject({ status: "delivered", attempts: 1, response: expect.stringMatching(/^250 /) });
  expect(state.message).toEqual({ deliveryStatus: "delivered", failureCode: null });

  const copies = sink.copiesFor(to);
  expect(copies.length).toBeGreaterThanOrEqual(1);
  expect(copies.length).toBeLessThanOrEqual(2);
  const ids = new Set(copies.map((c) => /^Message-ID: (.+)\r$/m.exec(c.raw.toString("utf8"))?.[1]));
  expect([...ids]).toEqual([s.internetMessageId]);
}, 90_000);
