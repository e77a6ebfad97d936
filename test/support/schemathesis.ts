// Installs a pinned schemathesis (PyPI) into its own virtual environment under the tools directory, the way
// src/runtime/temporal-cli.ts installs the Temporal CLI: once, at an exact version, renamed into place complete.
import { execFile } from "node:child_process";
import { access, constants, mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

export const SCHEMATHESIS_VERSION = "4.32.5";

// A virtual environment's scripts name its first path in their #! line, so after the rename the command is run
// through its python instead.
const ENTRY = "import sys; from schemathesis.cli import schemathesis; sys.argv[0] = 'schemathesis'; sys.exit(schemathesis())";

const run = promisify(execFile);

/** The argv prefix that runs the pinned schemathesis: `[python, "-c", entry]`; installs it when missing. */
export async function ensureSchemathesis(toolsDir: string, log?: (line: string) => void): Promise<string[]> {
  const installDir = join(toolsDir, `schemathesis-${SCHEMATHESIS_VERSION}`);
  const command = [join(installDir, "bin", "python"), "-c", ENTRY];
  if (!(await isExecutable(command[0]!))) await install(toolsDir, installDir, log);
  return command;
}

async function install(toolsDir: string, installDir: string, log?: (line: string) => void): Promise<void> {
  log?.(`installing schemathesis ${SCHEMATHESIS_VERSION} from PyPI into ${installDir}`);
  await mkdir(toolsDir, { recursive: true });
  const staging = await mkdtemp(join(toolsDir, `.schemathesis-${SCHEMATHESIS_VERSION}-`));
  try {
    await run("python3", ["-m", "venv", staging]);
    const python = join(staging, "bin", "python");
    await run(python, ["-m", "pip", "install", "--disable-pip-version-check", "--quiet", `schemathesis==${SCHEMATHESIS_VERSION}`], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const { stdout } = await run(python, ["-c", ENTRY, "--version"]);
    if (!stdout.includes(SCHEMATHESIS_VERSION)) throw new Error(`unexpected \`schemathesis --version\` output: ${stdout.trim()}`);
    try {
      await rename(staging, installDir);
    } catch (err) {
      // A concurrent install won the race: its result is as good as ours.
      if (!(await isExecutable(join(installDir, "bin", "python")))) throw err;
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(() => true, () => false);
}
