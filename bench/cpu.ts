// CPU accounting from Linux /proc: how the cores were shared between load generator, server and database.
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc times (USER_HZ, 100 on every mainstream Linux build). */
const TICKS_PER_S = 100;

/** Named groups of processes whose CPU time is measured together. */
export type ProcessGroups = Readonly<Record<string, () => readonly number[]>>;

interface Sample {
  readonly at: number;
  readonly machineBusy: number;
  /** Ticks so far per process, per group. */
  readonly groups: Readonly<Record<string, ReadonlyMap<number, number>>>;
}

/** Cores used on average over an interval, per group and for the whole machine (busy = not idle or iowait). */
export interface CpuShare {
  readonly machineCores: number;
  /** The machine minus the groups: processes outside the benchmark, and kernel time (loopback softirqs). */
  readonly otherCores: number;
  readonly groups: Readonly<Record<string, number>>;
}

export function startCpuMeter(groups: ProcessGroups): { stop(): CpuShare } {
  const sample = (): Sample => ({
    at: performance.now(),
    machineBusy: machineBusyTicks(),
    groups: Object.fromEntries(Object.entries(groups).map(([name, pids]) => [name, ticksOf(pids())])),
  });
  const start = sample();
  return {
    stop() {
      const end = sample();
      const seconds = (end.at - start.at) / 1000;
      const cores = (ticks: number) => ticks / TICKS_PER_S / seconds;
      const used = Object.fromEntries(
        Object.keys(groups).map((name) => [name, cores(ticksBetween(start.groups[name]!, end.groups[name]!))]),
      );
      const machineCores = cores(end.machineBusy - start.machineBusy);
      const otherCores = Math.max(0, machineCores - Object.values(used).reduce((a, b) => a + b, 0));
      return { machineCores, otherCores, groups: used };
    },
  };
}

/** The process and every direct child of it (PostgreSQL backends are children of the postmaster). */
export function withChildren(pid: number): number[] {
  const pids = [pid];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = statFields(Number(entry));
    if (stat && Number(stat[1]) === pid) pids.push(Number(entry));
  }
  return pids;
}

function ticksOf(pids: readonly number[]): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const pid of pids) {
    const stat = statFields(pid);
    if (stat) ticks.set(pid, Number(stat[11]) + Number(stat[12])); // utime, stime
  }
  return ticks;
}

/**
 * Per process, so that processes coming and going (pooled PostgreSQL backends) do not skew the sum: a process that
 * started meanwhile counts from zero; one that exited meanwhile loses its last ticks (an underestimate).
 */
function ticksBetween(start: ReadonlyMap<number, number>, end: ReadonlyMap<number, number>): number {
  let sum = 0;
  for (const [pid, ticks] of end) sum += ticks - (start.get(pid) ?? 0);
  return sum;
}

/** Fields of /proc/<pid>/stat after the command name (state is [0]); undefined when the process is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

function machineBusyTicks(): number {
  const [, ...fields] = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/);
  const ticks = fields.map(Number);
  const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0); // user … steal; guest time is already in user
  return total - ticks[3]! - ticks[4]!; // minus idle and iowait
}

/**
 * Waits, at most `maxWaitMs`, for a second in which the whole machine used at most `quietCores`: other work on a
 * shared machine (a test run, a compiler) would otherwise compete with the next run. Returns the time waited.
 */
export async function waitForQuiet(quietCores: number, maxWaitMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const before = machineBusyTicks();
    await new Promise((r) => setTimeout(r, 1000));
    const busyCores = (machineBusyTicks() - before) / TICKS_PER_S;
    const waited = performance.now() - started;
    if (busyCores <= quietCores || waited >= maxWaitMs) return waited;
  }
}
