// The `mailbox` command on a Node older than package.json's minimumNodeVersion: refused before anything starts, with
// a message that names the version needed and how to get it (it used to start, answer 250 to mail, and fail every
// parse). And the machine's own npm, on that older Node, runs `npx mailbox` without warning about it.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";

const ROOT = new URL("../../", import.meta.url).pathname;
/** The machine's own Node (20 here), not the project's Node 24 that npm puts first on PATH, and its npx. */
const OLD_NODE = "/usr/bin/node";
const OLD_NPX = "/usr/bin/npx";

const required = (JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { minimumNodeVersion: string }).minimumNodeVersion;
const oldVersion = spawnSync(OLD_NODE, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout?.trim();
const older = (a: string, b: string) => {
  const [x, y] = [a, b].map((v) => v.split(".").map(Number));
  for (let i = 0; i < 3; i++) if (x![i] !== y![i]) return x![i]! < y![i]!;
  return false;
};
const skipReason = !oldVersion ? `no Node.js at ${OLD_NODE}` : !older(oldVersion, required) ? `${OLD_NODE} is Node.js ${oldVersion}, not older than ${required}` : undefined;
if (skipReason) console.warn(`node-version test skipped: ${skipReason}`);

test.skipIf(skipReason !== undefined)(`mailbox start on an older Node (${OLD_NODE}, ${oldVersion}) exits at once, naming Node ${required} and how to get it`, async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "mailbox-old-node-"));
  try {
    // Bounded: the old behaviour was a service that started and kept running.
    const result = spawnSync(OLD_NODE, [join(ROOT, "src/cli/mailbox.js"), "start"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 60_000,
      killSignal: "SIGKILL",
      env: { ...process.env, DATA_DIR: dataDir, HTTP_PORT: "0", SMTP_PORT: "0", TEMPORAL_UI_PORT: "0" },
    });
    expect(result.signal).toBeNull();
    expect(result.status).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`mailbox needs Node.js ${required} or newer; this is Node.js v${oldVersion}`);
    expect(result.stderr).toContain("npm start");
    expect(result.stderr).toContain("install Node.js 24");
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test.skipIf(skipReason !== undefined || !existsSync(OLD_NPX))(`npx mailbox --help through the machine's npm (${OLD_NPX} on Node ${oldVersion}) prints no npm warning`, async () => {
  // The shell a person types into: no npm settings inherited from the npm that started this run, the project's
  // node_modules/.bin (Node 24) not on PATH, so npm itself runs on the machine's older Node. An empty npm cache:
  // npx links the project into its cache on the first call, and that is when it checked `engines` and warned.
  const cache = await mkdtemp(join(tmpdir(), "mailbox-npx-cache-"));
  try {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
    env.PATH = (process.env.PATH ?? "").split(":").filter((dir) => !dir.includes("node_modules/.bin")).join(":");
    env.npm_config_cache = cache;
    const result = spawnSync(OLD_NPX, ["mailbox", "--help"], { cwd: ROOT, encoding: "utf8", timeout: 60_000, killSignal: "SIGKILL", env });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("mailbox <command>");
    // It printed a five-line `npm warn EBADENGINE` block while package.json's `engines` asked for more than Node 20.
    expect(result.stderr).not.toMatch(/npm warn|EBADENGINE/i);
  } finally {
    await rm(cache, { recursive: true, force: true });
  }
});
