// The install lock of src/runtime/tool-install.ts: one install per tool however many processes ask at once, a lock left
// by a dead process taken over, and a failed install leaving nothing behind for the next caller.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { access, chmod, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, expect, test } from "vitest";
import { ensureTool } from "../../src/runtime/tool-install.js";

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
