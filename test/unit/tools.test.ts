// The installer of src/runtime/tool-install.ts: one install per tool however many processes ask at once, a lock left
// by a dead process taken over, and a failed install leaving nothing behind for the next caller; and where the tools
// directory is (src/runtime/tools-dir.ts).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { access, chmod, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, expect, test } from "vitest";
import { loadConfig } from "../../src/config.js";
import { ensureTool } from "../../src/runtime/tool-install.js";
import { defaultToolsDir, toolsDir as toolsDirOf } from "../../src/runtime/tools-dir.js";

let toolsDir: string;
beforeEach(async () => {
  toolsDir = await mkdtemp(join(tmpdir(), "mailbox-tools-"));
});
afterEach(async () => {
  await rm(toolsDir, { recursive: true, force: true });
});

/** An install that writes an executable `bin` after a pause, counting its runs. */
function fakeInstall(runs: { count: number }, pauseMs = 200) {
  return async (staging: string) => {
    runs.count++;
    await sleep(pauseMs);
    await writeFile(join(staging, "bin"), "#!/bin/sh\n");
    await chmod(join(staging, "bin"), 0o755);
  };
}

test("installs once when asked concurrently, and every caller gets the installed path", async () => {
  const runs = { count: 0 };
  const paths = await Promise.all(Array.from({ length: 5 }, () => ensureTool(toolsDir, "fake-1", "bin", fakeInstall(runs))));
  expect(runs.count).toBe(1);
  expect(new Set(paths)).toEqual(new Set([join(toolsDir, "fake-1", "bin")]));
  expect((await readdir(toolsDir)).sort()).toEqual(["fake-1"]);
});

test("takes over a lock whose process has ended", async () => {
  const child = spawn(process.execPath, ["-e", ""]);
  await once(child, "exit");
  await writeFile(join(toolsDir, ".fake-1.lock"), String(child.pid));
  const runs = { count: 0 };
  expect(await ensureTool(toolsDir, "fake-1", "bin", fakeInstall(runs, 0))).toBe(join(toolsDir, "fake-1", "bin"));
  expect(runs.count).toBe(1);
});

test("a failed install leaves no lock and no tool, and the next caller installs it", async () => {
  await expect(
    ensureTool(
      toolsDir,
      "fake-1",
      "bin",
      async () => {
        throw new Error("the registry said no");
      },
    ),
  ).rejects.toThrow("the registry said no");
  expect(await readdir(toolsDir)).toEqual([]);
  const runs = { count: 0 };
  const path = await ensureTool(toolsDir, "fake-1", "bin", fakeInstall(runs, 0));
  await access(path);
  expect(runs.count).toBe(1);
});

test("the tools directory is TOOLS_DIR when set, else a cache of the user's that every checkout shares", () => {
  const home = homedir();
  expect(defaultToolsDir({})).toBe(join(home, ".cache", "agent-mailbox", "tools"));
  expect(defaultToolsDir({ XDG_CACHE_HOME: "/var/cache/me" })).toBe("/var/cache/me/agent-mailbox/tools");
  // The XDG base directory specification: a relative path is invalid and ignored.
  expect(defaultToolsDir({ XDG_CACHE_HOME: "cache" })).toBe(join(home, ".cache", "agent-mailbox", "tools"));
  expect(toolsDirOf({ XDG_CACHE_HOME: "/var/cache/me" })).toBe("/var/cache/me/agent-mailbox/tools");
  expect(toolsDirOf({ TOOLS_DIR: "./.tools", XDG_CACHE_HOME: "/var/cache/me" })).toBe(resolve(".tools"));
  expect(toolsDirOf({ TOOLS_DIR: "", XDG_CACHE_HOME: "/var/cache/me" })).toBe("/var/cache/me/agent-mailbox/tools");
  // The service's configuration follows the same default, and a checkout's own ./.tools still works when named.
  expect(loadConfig({}).toolsDir).toBe(defaultToolsDir());
  expect(loadConfig({ TOOLS_DIR: "./.tools" }).toolsDir).toBe(resolve(".tools"));
});

test("no code names a checkout's .tools itself: every tools directory comes from src/runtime/tools-dir.ts", () => {
  // A hard-coded ./.tools made a fresh clone install the Temporal CLI a second time (bench/stack.ts, which
  // test/e2e/faults.test.ts starts). Exceptions: this file, which asserts TOOLS_DIR=./.tools still works, and the
  // inbound benchmark's Haraka peer (bench only, moved by BENCH_HARAKA_DIR).
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const exceptions = new Set(["test/unit/tools.test.ts", "bench/inbound-peers.ts"]);
  const literal = /["'`](?:\.\/)?\.tools(?:\/|["'`])/;
  const offenders = ["src", "test", "bench", "workflows"]
    .flatMap((dir) => readdirSync(join(root, dir), { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile() && /\.(ts|js|mjs)$/.test(entry.name))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
    .filter((file) => !exceptions.has(file) && literal.test(readFileSync(join(root, file), "utf8")));
  expect(offenders).toEqual([]);
  // The pattern finds what it is for.
  expect(literal.test('ensureTemporalCli({ toolsDir: resolve(".tools") })')).toBe(true);
  expect(literal.test("`.tools/haraka-${version}`")).toBe(true);
});
