// The quick start's `mailbox start`: embedded PostgreSQL and Temporal, API and worker in one process, operator
// commands reaching its database, and an orderly stop on SIGTERM that leaves no child process behind.
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, test } from "vitest";

const run = promisify(execFile);
let dataDir: string | undefined;
afterAll(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test("mailbox start runs the whole service on embedded defaults and stops cleanly", async () => {
  dataDir = await mkdtemp(join(tmpdir(), "mailbox-start-"));
  await chmod(dataDir, 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, HTTP_PORT: "0", SMTP_PORT: "0", TEMPORAL_UI_PORT: "0", LOG_LEVEL: "warn" };
  delete env.DATABASE_URL;
  delete env.TEMPORAL_ADDRESS;
  const child = spawn(process.execPath, ["src/cli/mailbox.js", "start"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  let stdout = "";
  const summary = await new Promise<{ api: string; smtp: string; roles: string[] }>((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      const line = stdout.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line));
    });
    child.once("exit", (code) => reject(new Error(`start exited with ${code}: ${stderr}`)));
  });
  try {
    expect(summary.roles).toEqual(["api", "worker", "smtp"]);
    expect(summary.smtp).toMatch(/^127\.0\.0\.1:\d+$/);
    const openapi = await fetch(`${summary.api}/openapi.json`);
    expect(openapi.status).toBe(200);
    expect(((await openapi.json()) as { info: { version: string } }).info.version).toBe("0.1.0-private-beta");

    // Operator commands find the running embedded database through DATA_DIR.
    const cli = (...args: string[]) => run(process.execPath, ["src/cli/mailbox.js", ...args], { env }).then((r) => JSON.parse(r.stdout));
    const org = await cli("admin", "org", "create", "--name", "QuickStart");
    const key = await cli("admin", "key", "issue", "--org", org.id, "--scopes", "*");
    const created = await fetch(`${summary.api}/v1/inboxes`, {
      method: "POST",
      headers: { "x-api-key": key.secret, "content-type": "application/json" },
      body: JSON.stringify({ localPart: "first-agent", displayName: "First" }),
    });
    expect(created.status).toBe(201);
    expect(JSON.parse(await readFile(join(dataDir, "runtime.json"), "utf8")).pid).toBe(child.pid);
  } finally {
    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
  }
  // The embedded PostgreSQL is stopped with the service (its pid file is gone).
  await expect(readFile(join(dataDir, "postgres", "postmaster.pid"))).rejects.toThrow();
}, 120_000);
