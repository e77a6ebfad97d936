// Embedded servers go down with the process that started them, however it ends (SIGKILL and the OOM killer
// included): a small process of its own, the watchdog, reads a pipe from that process and, once the pipe closes,
// stops every server it was told to watch, gently first (each server's own clean shutdown signal).
//
// This file is also the watchdog's program. Node runs it directly (type stripping, no tsx: a bare node process
// starts in ~50 ms with ~40 MB), so it imports nothing but node: modules and uses erasable TypeScript only.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

/** A process as it was when recorded: a pid reused later by another process has another start time. */
export interface ProcessIdentity {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot. */
  readonly startTime: string;
}

/** One step of stopping a process: a signal, then how long the process is given to exit before the next step. */
export interface StopStep {
  readonly signal: NodeJS.Signals;
  readonly waitMs: number;
}

/** The running process with this pid (not a zombie), or undefined; also undefined without Linux's /proc. */
export function identityOf(pid: number): ProcessIdentity | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name in parentheses may hold spaces; the fields after it are plain.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  if (fields[0] === "Z" || fields[0] === "X") return undefined; // exited, not yet reaped
  return { pid, startTime: fields[19]! };
}

export function isRunning(identity: ProcessIdentity): boolean {
  return identityOf(identity.pid)?.startTime === identity.startTime;
}

/** The process's arguments (empty when it is gone or not readable). */
export function commandLineOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((arg) => arg !== "");
  } catch {
    return [];
  }
}

const POLL_MS = 50;

/** Takes the steps until the process has exited; true when it has. Never signals a process that is not `identity`. */
export async function stopProcess(identity: ProcessIdentity, steps: readonly StopStep[]): Promise<boolean> {
  for (const step of steps) {
    if (!isRunning(identity)) return true;
    try {
      process.kill(identity.pid, step.signal);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ESRCH") return true;
      throw e;
    }
    for (const until = Date.now() + step.waitMs; Date.now() < until && isRunning(identity); ) await sleep(POLL_MS);
  }
  return !isRunning(identity);
}

// --- The parent's side ---------------------------------------------------------------------------------------

type Command =
  | { readonly watch: ProcessIdentity & { readonly name: string; readonly steps: readonly StopStep[] } }
  | { readonly unwatch: number };

let watchdog: ChildProcess | undefined;

/**
 * Has the watchdog stop `identity` (with `steps`) should this process end before calling the returned function,
 * which an orderly stop calls once the server is down.
 */
export function stopWithThisProcess(name: string, identity: ProcessIdentity, steps: readonly StopStep[]): () => void {
  const send = (command: Command): void => {
    watchdog ??= spawnWatchdog();
    watchdog.stdin!.write(`${JSON.stringify(command)}\n`);
  };
  send({ watch: { name, ...identity, steps } });
  return () => send({ unwatch: identity.pid });
}

function spawnWatchdog(): ChildProcess {
  const child = spawn(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", fileURLToPath(import.meta.url)],
    // Its own session: a Ctrl-C or SIGKILL sent to this process group does not reach it. stderr is shared, so
    // what it stops is said where this process's own output goes.
    { detached: true, stdio: ["pipe", "ignore", "inherit"], env: {} },
  );
  // Neither the process nor its pipe keeps this one's event loop alive.
  child.unref();
  (child.stdin as unknown as { unref(): void }).unref();
  const lost = (e: Error) => process.stderr.write(`watchdog: ${e.message}; embedded servers may outlive this process\n`);
  child.on("error", lost);
  child.stdin!.on("error", lost);
  return child;
}

// --- The watchdog's program ----------------------------------------------------------------------------------

async function runWatchdog(): Promise<void> {
  process.stderr.on("error", () => undefined); // whoever read the shared stderr may be gone too
  const watched = new Map<number, { name: string; identity: ProcessIdentity; steps: readonly StopStep[] }>();
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    const command = JSON.parse(line) as Command;
    if ("watch" in command) {
      const { name, pid, startTime, steps } = command.watch;
      watched.set(pid, { name, identity: { pid, startTime }, steps });
    } else watched.delete(command.unwatch);
  });
  // The pipe closes when the process that started the servers has ended, whatever ended it.
  await new Promise((resolve) => lines.once("close", resolve));
  await Promise.all(
    [...watched.values()].map(async ({ name, identity, steps }) => {
      if (!isRunning(identity)) return;
      process.stderr.write(`watchdog: ${name} (pid ${identity.pid}): the process that started it has ended; stopping it\n`);
      if (!(await stopProcess(identity, steps))) process.stderr.write(`watchdog: ${name} (pid ${identity.pid}) did not stop\n`);
    }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runWatchdog().then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`watchdog: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
