// The test loop's own instruments: a reporter that ends each run with its slowest files, and a sequencer that
// starts the files known to be slow first, so that a fresh clone (no timings cached yet) does not leave the longest
// file for last and wait on it alone.
import { relative } from "node:path";
import { BaseSequencer, type Reporter, type TestModule, type TestSpecification } from "vitest/node";
import { liveDescendants, readWriteBytes, treeCpuSeconds, type ProcessCpu } from "./cpu-usage.js";

const SHOWN = 10;

/**
 * Where the global setup records the pid of a server it started whose process may not stay below vitest's (the
 * embedded PostgreSQL's postmaster), by name; the reporter adds its CPU to the run's.
 */
const SERVER_PIDS = Symbol.for("mailbox.test.serverPids");
export function recordServerPid(name: string, pid: number): void {
  const registry = globalThis as { [SERVER_PIDS]?: Map<string, number> };
  (registry[SERVER_PIDS] ??= new Map()).set(name, pid);
}

/**
 * Prints the slowest test files of the run (wall time from the file's start to its end, its share in tests) and the
 * files that cost most CPU (test/support/file-cpu.ts measures them in the worker), then the CPU of the run's
 * servers and of vitest's own process, read from /proc. CPU-seconds compare across runs on a loaded machine; wall
 * time does not.
 */
export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const rows = testModules.map((m) => {
      const d = m.diagnostic();
      const meta = m.meta();
      return { file: m.relativeModuleId, wall: d.collectDuration + d.duration, import: d.collectDuration, tests: d.duration, cpu: meta.cpuSeconds, written: meta.writeBytes };
    });
    if (rows.length === 0) return;
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    const cpu = (seconds: number | undefined) => (seconds === undefined ? "?" : `${seconds.toFixed(1)} CPU-s`);
    const width = Math.max(...rows.map((r) => r.file.length));
    const slowest = [...rows].sort((a, b) => b.wall - a.wall).slice(0, SHOWN);
    const costliest = [...rows].sort((a, b) => (b.cpu ?? 0) - (a.cpu ?? 0)).slice(0, SHOWN);
    const writing = [...rows].sort((a, b) => (b.written ?? 0) - (a.written ?? 0)).slice(0, SHOWN).filter((r) => (r.written ?? 0) > 0);
    const out = [
      `\n Slowest ${slowest.length} test files`,
      ...slowest.map(
        (r) => `  ${r.file.padEnd(width)} ${s(r.wall).padStart(8)}  (import ${s(r.import)}, tests and hooks ${s(r.tests)}; ${cpu(r.cpu)})`,
      ),
      `\n Costliest ${costliest.length} test files in CPU (the worker and the processes it started)`,
      ...costliest.map((r) => `  ${r.file.padEnd(width)} ${cpu(r.cpu).padStart(13)}  (${s(r.wall)})`),
      `\n Most writing ${writing.length} test files (bytes the worker and the processes it started wrote to storage)`,
      ...writing.map((r) => `  ${r.file.padEnd(width)} ${megabytes(r.written!).padStart(13)}  (${s(r.wall)})`),
      `\n ${runCpu(rows.reduce((sum, r) => sum + (r.cpu ?? 0), 0))}`,
      ` ${runWrites(rows.reduce((sum, r) => sum + (r.written ?? 0), 0))}`,
    ];
    process.stdout.write(`${out.join("\n")}\n`);
  }
}

/**
 * The live processes below vitest's own, by the server each belongs to (the child of vitest's process it descends
 * from, named by its command), and the servers the global setup recorded that are no longer below it, by pid.
 */
function serverProcesses(): { groups: Map<string, ProcessCpu[]>; detached: Map<string, number> } {
  const below = liveDescendants(process.pid);
  const byPid = new Map(below.map((p) => [p.pid, p]));
  const topOf = (pid: number): number => {
    let at = byPid.get(pid)!;
    for (let hops = 0; at.ppid !== process.pid && byPid.has(at.ppid) && hops < 64; hops++) at = byPid.get(at.ppid)!;
    return at.pid;
  };
  const groups = new Map<string, ProcessCpu[]>();
  for (const p of below) {
    const top = byPid.get(topOf(p.pid))!;
    // vitest's workers (Node names its main thread, and so the process, MainThread) run the test files, each
    // counted per file already.
    if (top.command !== "node" && top.command !== "MainThread") groups.set(top.command, [...(groups.get(top.command) ?? []), p]);
  }
  const detached = new Map<string, number>();
  for (const [name, pid] of (globalThis as { [SERVER_PIDS]?: Map<string, number> })[SERVER_PIDS] ?? []) {
    if (!byPid.has(pid)) detached.set(name, pid);
  }
  return { groups, detached };
}

/** One line: the CPU-seconds of the test files, of each server the run started and of vitest's own process. */
function runCpu(filesSeconds: number): string {
  const { groups, detached } = serverProcesses();
  const seconds = new Map<string, number>();
  const add = (name: string, n: number) => seconds.set(name, (seconds.get(name) ?? 0) + n);
  for (const [name, processes] of groups) for (const p of processes) add(name, p.ownSeconds + p.reapedChildrenSeconds);
  for (const [name, pid] of detached) add(name, treeCpuSeconds(pid));
  const { user, system } = process.cpuUsage();
  const own = (user + system) / 1e6;
  const servers = [...seconds].filter(([, n]) => n >= 0.05).sort((a, b) => b[1] - a[1]);
  const total = filesSeconds + own + servers.reduce((sum, [, n]) => sum + n, 0);
  const parts = servers.map(([name, n]) => `${name} ${n.toFixed(1)}`).join(", ");
  return `CPU-seconds of the run: ${total.toFixed(1)} = test files ${filesSeconds.toFixed(1)} + vitest's own process ${own.toFixed(1)} (global setup, transforms, reporters) + live processes below it: ${parts || "none"}`;
}

/**
 * One line: the bytes written to storage by the test files, by each server the run started (a process's count holds
 * its ended children's: PostgreSQL's backends are in the postmaster's) and by vitest's own process (with its ended
 * workers').
 */
function runWrites(filesBytes: number): string {
  const { groups, detached } = serverProcesses();
  const bytes = new Map<string, number>();
  const add = (name: string, n: number) => bytes.set(name, (bytes.get(name) ?? 0) + n);
  for (const [name, processes] of groups) for (const p of processes) add(name, readWriteBytes(p.pid) ?? 0);
  for (const [name, pid] of detached) {
    for (const p of [pid, ...liveDescendants(pid).map((d) => d.pid)]) add(name, readWriteBytes(p) ?? 0);
  }
  const parts = [...bytes].sort((a, b) => b[1] - a[1]).map(([name, n]) => `${name} ${megabytes(n)}`).join(", ");
  return `Bytes written to storage: test files ${megabytes(filesBytes)}, vitest's own process and its ended workers ${megabytes(readWriteBytes("self") ?? 0)}, live processes below it: ${parts || "none"}`;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(0)} MB`;
}

/**
 * The files that took longest in recent runs (the reporter above lists them), longest first. Timings vitest has
 * cached from an earlier run order the rest, as its own sequencer does. The two memory files take turns
 * (test/support/large-mail-role.ts): with four files at once the second is placed where about three others have
 * ended before it starts (~50 s into a quiet run, the first takes ~55 s), so that it waits little on the first.
 * Checked against a fresh clone's run at 6d59520 (load 1-8; seconds of tests and hooks): smtp-memory 99,
 * schemathesis 94, faults 69, start 52, external-tls 47, drain 46, roles-scale-out 40, holds 36, temporal-outage 34,
 * inbound-batch-processing 34, mcp 34, delivery-worker-kill 27, send 22, health-metrics 22, api-edge-limits 21.
 * Two fresh clones' runs on h/testloop4 (load 14-20 and 17-31) kept the first four and put drain before external-tls
 * (90/58 against 67/43 s) and inbound-batch-processing and mcp before roles-scale-out and holds (65/105 and 55/80
 * against 58/28 and 50/50 s); at loads 1-8 those were within 2 s of each other.
 */
export const KNOWN_SLOW = [
  "test/e2e/smtp-memory.test.ts",
  "test/e2e/schemathesis.test.ts",
  "test/e2e/faults.test.ts",
  "test/e2e/start.test.ts",
  "test/e2e/drain.test.ts",
  "test/e2e/external-tls.test.ts",
  "test/e2e/smtp-memory-large-mail.test.ts",
  "test/e2e/inbound-batch-processing.test.ts",
  "test/e2e/mcp.test.ts",
  "test/e2e/roles-scale-out.test.ts",
  "test/e2e/holds.test.ts",
  "test/e2e/temporal-outage.test.ts",
  "test/e2e/delivery-worker-kill.test.ts",
  "test/e2e/send.test.ts",
  "test/e2e/health-metrics.test.ts",
  "test/e2e/api-edge-limits.test.ts",
];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = KNOWN_SLOW.indexOf(relative(this.ctx.config.root, spec.moduleId));
      return at === -1 ? KNOWN_SLOW.length : at;
    };
    // Array.prototype.sort is stable: the rest keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
