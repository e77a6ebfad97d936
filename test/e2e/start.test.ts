// The quick start's `mailbox start`: embedded PostgreSQL and Temporal, API and worker in one process, operator
// commands reaching its database, an orderly stop on SIGTERM that leaves no child process behind, and a crash
// (SIGKILL) that takes the embedded servers down with it and is followed by a start that serves the same data.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";
import { commandLineOf, identityOf, isRunning, type ProcessIdentity } from "../../src/runtime/watchdog.js";
import { eventually } from "../support/harness.js";

const run = promisify(execFile);
const dataDirs: string[] = [];
const started: ChildProcess[] = [];
afterAll(async () => {
  for (const child of started) child.kill("SIGKILL");
  for (const dir of dataDirs) {
    for (const p of await processesIn(dir)) process.kill(p.pid, "SIGKILL");
    await rm(dir, { recursive: true, force: true });
  }
});

interface Started {
  readonly child: ChildProcess;
  readonly summary: { api: string; smtp: string; roles: string[]; temporalUi: string | null };
  readonly env: NodeJS.ProcessEnv;
}

async function newDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mailbox-start-"));
  // Run by root, the embedded PostgreSQL runs as the postgres user, which must reach its data directory.
  await chmod(dir, 0o755);
  dataDirs.push(dir);
  return dir;
}

/** `mailbox start` as its own process on `dataDir`; resolves with the summary line it prints once it serves. */
async function start(dataDir: string, ports: { HTTP_PORT: string; SMTP_PORT: string } = { HTTP_PORT: "0", SMTP_PORT: "0" }): Promise<Started> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, ...ports, TEMPORAL_UI_PORT: "0", LOG_LEVEL: "warn" };
  delete env.DATABASE_URL;
  delete env.TEMPORAL_ADDRESS;
  const child = spawn(process.execPath, ["src/cli/mailbox.js", "start"], { env, stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  let stdout = "";
  const summary = await new Promise<Started["summary"]>((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      const line = stdout.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line));
    });
    child.once("exit", (code) => reject(new Error(`start exited with ${code}: ${stderr}`)));
  });
  return { child, summary, env };
}

/**
 * Running processes whose command line names something in `dataDir` (the postmaster and the Temporal dev server),
 * without their own children (a backend the postmaster has just forked still shows its command line).
 */
async function processesIn(dataDir: string): Promise<ProcessIdentity[]> {
  const found = (await processes()).filter((p) => commandLineOf(p.pid).some((arg) => arg.startsWith(dataDir)));
  const pids = new Set(found.map((p) => p.pid));
  return found.filter((p) => !pids.has(p.parent)).map(({ pid, startTime }) => ({ pid, startTime }));
}

/** The watchdog of the process `pid`: its child running the watchdog program (dist/…/watchdog.js from the build, else src/runtime/watchdog.ts). */
async function watchdogOf(pid: number): Promise<number> {
  const watchdog = (await processes()).find((p) => p.parent === pid && commandLineOf(p.pid).some((arg) => /watchdog\.[jt]s$/.test(arg)));
  if (watchdog === undefined) throw new Error(`no watchdog runs for pid ${pid}`);
  return watchdog.pid;
}

async function processes(): Promise<(ProcessIdentity & { parent: number })[]> {
  const all: (ProcessIdentity & { parent: number })[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const identity = identityOf(Number(entry));
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    if (identity) all.push({ ...identity, parent: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) });
  }
  return all;
}

async function killed(child: ChildProcess): Promise<void> {
  const exit = once(child, "exit");
  child.kill("SIGKILL");
  await exit;
}

async function stopped(child: ChildProcess): Promise<number | null> {
  const exit = once(child, "exit");
  child.kill("SIGTERM");
  const [code] = await exit;
  return code as number | null;
}

test("mailbox start runs the whole service on embedded defaults and stops cleanly", async () => {
  const dataDir = await newDataDir();
  const { child, summary, env } = await start(dataDir);
  try {
    expect(summary.roles).toEqual(["api", "worker", "smtp"]);
    expect(summary.smtp).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(summary.temporalUi).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
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
    expect(await stopped(child)).toBe(0);
  }
  // The embedded PostgreSQL is stopped with the service (its pid file is gone), and nothing else of it runs.
  await expect(readFile(join(dataDir, "postgres", "postmaster.pid"))).rejects.toThrow();
  expect(await processesIn(dataDir)).toEqual([]);
}, 120_000);

describe("a start killed with SIGKILL", () => {
  let dataDir: string;
  let ports: { HTTP_PORT: string; SMTP_PORT: string };
  let key: string;
  let inboxId: string;
  let left: ProcessIdentity[] = [];

  test("takes its PostgreSQL (by a clean shutdown) and its Temporal server down with it", async () => {
    dataDir = await newDataDir();
    const first = await start(dataDir);
    ports = { HTTP_PORT: first.summary.api.split(":").pop()!, SMTP_PORT: first.summary.smtp.split(":").pop()! };
    const cli = (...args: string[]) => run(process.execPath, ["src/cli/mailbox.js", ...args], { env: first.env }).then((r) => JSON.parse(r.stdout));
    const org = await cli("admin", "org", "create", "--name", "Crashes");
    key = (await cli("admin", "key", "issue", "--org", org.id, "--scopes", "*")).secret;
    const created = await fetch(`${first.summary.api}/v1/inboxes`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ localPart: "survivor", displayName: "Survivor" }),
    });
    expect(created.status).toBe(201);
    inboxId = ((await created.json()) as { id: string }).id;
    const servers = await processesIn(dataDir);
    expect(servers.length).toBe(2); // the postmaster and the Temporal dev server

    await killed(first.child);
    await eventually(async () => ((await processesIn(dataDir)).length === 0 ? true : undefined), 60_000);
    // A postmaster that shut down cleanly removes its pid file; one killed leaves it.
    await expect(readFile(join(dataDir, "postgres", "postmaster.pid"))).rejects.toThrow();
  }, 180_000);

  test("is followed by a start that serves the data it had, on the same ports", async () => {
    const second = await start(dataDir, ports);
    expect(second.summary.api).toBe(`http://127.0.0.1:${ports.HTTP_PORT}`);
    const inbox = await fetch(`${second.summary.api}/v1/inboxes/${inboxId}`, { headers: { "x-api-key": key } });
    expect(inbox.status).toBe(200);
    expect(((await inbox.json()) as { displayName: string }).displayName).toBe("Survivor");

    // Now a harder crash: the watchdog dies too (as when the whole process group is killed), so the servers stay.
    process.kill(await watchdogOf(second.child.pid!), "SIGKILL");
    await killed(second.child);
    left = await processesIn(dataDir);
    expect(left.length).toBe(2); // the postmaster and the Temporal dev server
  }, 180_000);

  test("is followed by a start that stops what it left running, then serves the same data", async () => {
    const third = await start(dataDir, ports);
    for (const leftover of left) expect(isRunning(leftover)).toBe(false);
    const inbox = await fetch(`${third.summary.api}/v1/inboxes/${inboxId}`, { headers: { "x-api-key": key } });
    expect(inbox.status).toBe(200);
    expect(await stopped(third.child)).toBe(0);
    expect(await processesIn(dataDir)).toEqual([]);
  }, 180_000);
});
