// CPU time of processes as Linux accounts it in /proc/<pid>/stat: the test loop's cost in CPU-seconds, which other
// work on the machine does not inflate as it does wall time.
import { readdirSync, readFileSync } from "node:fs";

/** USER_HZ: the unit of /proc's times, 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

export interface ProcessCpu {
  readonly pid: number;
  readonly ppid: number;
  /** The executable's name (at most 15 characters). */
  readonly command: string;
  /** User and system time of the process itself, all threads. */
  readonly ownSeconds: number;
  /** User and system time of its children that have ended and been waited for (and theirs, when they waited). */
  readonly reapedChildrenSeconds: number;
}

/** The process's CPU times; undefined once it has ended. */
export function readProcessCpu(pid: number | "self"): ProcessCpu | undefined {
  const stat = readProcFile(pid, "stat");
  if (stat === undefined) return undefined;
  // The command sits in parentheses and may itself hold spaces and parentheses: the fields follow the last ')'.
  const close = stat.lastIndexOf(")");
  const fields = stat.slice(close + 2).split(" ");
  const ticks = (field: number) => Number(fields[field - 3]); // field numbers as proc(5) gives them
  return {
    pid: Number.parseInt(stat, 10),
    ppid: ticks(4),
    command: stat.slice(stat.indexOf("(") + 1, close),
    ownSeconds: (ticks(14) + ticks(15)) / TICKS_PER_SECOND,
    reapedChildrenSeconds: (ticks(16) + ticks(17)) / TICKS_PER_SECOND,
  };
}

/**
 * Bytes the process caused to be written to storage (write_bytes of /proc/<pid>/io: page-cache pages it dirtied,
 * whenever they reach the disk), its own and those of its children that have ended and been waited for, which the
 * kernel adds to the parent's count; undefined once it has ended or when the file is not readable.
 */
export function readWriteBytes(pid: number | "self"): number | undefined {
  const found = /^write_bytes: (\d+)$/m.exec(readProcFile(pid, "io") ?? "");
  return found ? Number(found[1]) : undefined;
}

/** A file of /proc/<pid>/; undefined once the process has ended or when it is not readable. */
function readProcFile(pid: number | "self", name: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${name}`, "utf8");
  } catch {
    return undefined;
  }
}

/** This process's CPU-seconds so far: its own (to the microsecond) and its reaped children's. */
export function ownCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6 + (readProcessCpu("self")?.reapedChildrenSeconds ?? 0);
}

/** Every live process below `root` (children, their children, …), read in one pass over /proc. */
export function liveDescendants(root: number): ProcessCpu[] {
  const all = readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readProcessCpu(Number(name)))
    .filter((p): p is ProcessCpu => p !== undefined);
  const below = new Set([root]);
  const found: ProcessCpu[] = [];
  // Bounded: each pass adds at least one process or ends.
  for (let added = true; added; ) {
    added = false;
    for (const p of all) {
      if (!below.has(p.pid) && below.has(p.ppid)) {
        below.add(p.pid);
        found.push(p);
        added = true;
      }
    }
  }
  return found;
}

/** CPU-seconds of a process and everything below it, ended (and waited for) or live. */
export function treeCpuSeconds(pid: number, descendants: readonly ProcessCpu[] = liveDescendants(pid)): number {
  const root = readProcessCpu(pid);
  if (root === undefined) return 0;
  const total = (p: ProcessCpu) => p.ownSeconds + p.reapedChildrenSeconds;
  return total(root) + descendants.reduce((sum, p) => sum + total(p), 0);
}
