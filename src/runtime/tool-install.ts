// Installing a tool pinned by version into a tools directory (src/runtime/tools-dir.ts) that several checkouts and
// processes share: one install at a time per tool, made in a staging folder and renamed into place when complete, so
// a tool's folder is never half an install and two clones starting at once never corrupt it.
import { access, chmod, constants, mkdir, mkdtemp, open, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** The longest a process waits for another process's install of a tool (a cold Go build of helm on two busy cores). */
const INSTALL_WAIT_MS = 20 * 60_000;
const LOCK_POLL_MS = 250;

/**
 * `<toolsDir>/<name>/<binary>`, installed by `install` into a staging folder that is renamed into place when
 * complete. One install at a time per tool across processes: the installer holds `<toolsDir>/.<name>.lock` (its pid
 * inside), and others wait until it is gone, then use the tool or, if that install failed, try themselves.
 */
export async function ensureTool(toolsDir: string, name: string, binary: string, install: (staging: string) => Promise<void>): Promise<string> {
  const dir = join(toolsDir, name);
  if (await isExecutable(join(dir, binary))) return join(dir, binary);
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

export async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(() => true, () => false);
}
