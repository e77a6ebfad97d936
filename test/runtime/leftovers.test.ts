// Embedded servers and the process that started them: the watchdog stops a server when its starter dies (SIGKILL
// included), and the next start stops what a run that ended left running, never a process it cannot prove is it.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { claimEmbeddedServer, type EmbeddedServer } from "../../src/runtime/leftovers.js";
import { identityOf, isRunning, type ProcessIdentity } from "../../src/runtime/watchdog.js";

const ROOT = new URL("../../", import.meta.url).pathname;
const STOP_STEPS = [
  { signal: "SIGINT", waitMs: 10_000 },
  { signal: "SIGKILL", waitMs: 5_000 },
] as const;

let dir: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "mailbox-leftovers-"));
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await rm(dir, { recursive: true, force: true });
});

const server = (marker: string): EmbeddedServer => ({
  name: "the test server",
  stopSteps: STOP_STEPS,
  state: { dataDir: dir, recordName: "test", marker },
});

/** A stand-in server: its command line holds `marker`; on SIGINT it writes "SIGINT" to `<marker>.stopped` and exits. */
async function startServer(marker: string): Promise<ChildProcess> {
  const script = `process.on("SIGINT", () => { require("fs").writeFileSync(process.argv[1] + ".stopped", "SIGINT"); process.exit(0); });
setInterval(() => {}, 1000); console.log("ready");`;
  const child = spawn(process.execPath, ["-e", script, marker], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  await once(createInterface({ input: child.stdout! }), "line");
  return child;
}

const identity = (child: ChildProcess): ProcessIdentity => identityOf(child.pid!)!;
const exitOf = (child: ChildProcess) => (child.exitCode !== null ? Promise.resolve() : once(child, "exit").then(() => undefined));

async function writeRecord(record: unknown): Promise<void> {
  await mkdir(join(dir, "run"), { recursive: true });
  await writeFile(join(dir, "run", "test.json"), JSON.stringify(record));
}

/** An owner that has ended: a pid with a start time no running process has. */
const GONE: ProcessIdentity = { pid: process.pid, startTime: "0" };

describe("claimEmbeddedServer", () => {
  it("stops a server left running by a run that has ended, with its clean shutdown signal", async () => {
    const marker = join(dir, "db");
    const left = await startServer(marker);
    await writeRecord({ owner: GONE, server: identity(left) });
    const said: string[] = [];

    const claim = await claimEmbeddedServer(server(marker), undefined, (line) => said.push(line));
    await exitOf(left);
    expect(await readFile(`${marker}.stopped`, "utf8")).toBe("SIGINT");
    expect(said.join("\n")).toMatch(new RegExp(`stopping the test server \\(pid ${left.pid}\\).*left running by a run that ended`));
    // This process is the owner now.
    expect(JSON.parse(await readFile(join(dir, "run", "test.json"), "utf8"))).toEqual({ owner: identityOf(process.pid) });
    await claim.release();
  });

  it("finds the server through the pid it reports itself when the record lacks it (killed during start)", async () => {
    const marker = join(dir, "db");
    const left = await startServer(marker);
    await writeRecord({ owner: GONE });
    await claimEmbeddedServer(server(marker), left.pid, () => undefined);
    await exitOf(left);
    expect(await readFile(`${marker}.stopped`, "utf8")).toBe("SIGINT");
  });

  it("never signals a process that merely holds a recorded pid: another start time or another command line", async () => {
    const marker = join(dir, "db");
    const other = await startServer(join(dir, "another-db"));
    const reused = { ...identity(other), startTime: String(Number(identity(other).startTime) - 1) };
    await writeRecord({ owner: GONE, server: reused });
    await claimEmbeddedServer(server(marker), undefined, () => undefined);
    await writeRecord({ owner: GONE, server: identity(other) });
    await claimEmbeddedServer(server(marker), other.pid, () => undefined);
    expect(isRunning(identity(other))).toBe(true);
  });

  it("refuses a server whose starting process still runs, and one it has no record of", async () => {
    const marker = join(dir, "db");
    const running = await startServer(marker);
    const claim = await claimEmbeddedServer(server(marker), undefined, () => undefined);
    await claim.started(running.pid!);
    await expect(claimEmbeddedServer(server(marker), undefined, () => undefined)).rejects.toThrow(
      new RegExp(`already running in ${marker} \\(pid ${running.pid}\\), started by pid ${process.pid}, which still runs`),
    );
    await claim.release();
    await expect(claimEmbeddedServer(server(marker), running.pid, () => undefined)).rejects.toThrow(/started by a process this service has no record of/);
    expect(isRunning(identity(running))).toBe(true);
  });
});

describe("the watchdog", () => {
  it("stops a server with its clean shutdown signal when the process that started it is killed with SIGKILL", { timeout: 60_000 }, async () => {
    const marker = join(dir, "db");
    const left = await startServer(marker);
    // The starter: claims the server, reports, and waits to be killed.
    const script = join(dir, "starter.mts");
    await writeFile(
      script,
      `import { claimEmbeddedServer } from ${JSON.stringify(join(ROOT, "src/runtime/leftovers.ts"))};
const claim = await claimEmbeddedServer(${JSON.stringify(server(marker))}, undefined, () => undefined);
await claim.started(${left.pid});
console.log("watching");
setInterval(() => {}, 1000);
`,
    );
    const starter = spawn(process.execPath, ["--import", "tsx", script], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    children.push(starter);
    await once(createInterface({ input: starter.stdout! }), "line");
    expect(isRunning(identity(left))).toBe(true);

    starter.kill("SIGKILL");
    await exitOf(left);
    expect(await readFile(`${marker}.stopped`, "utf8")).toBe("SIGINT");
  });
});
