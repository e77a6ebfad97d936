// What a benchmark record says about where and on what it ran: the revision and the machine's load.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { availableParallelism, cpus, totalmem } from "node:os";

/** /proc/loadavg: the 1, 5 and 15 minute load averages. */
export function loadAverage(): [number, number, number] {
  const [a, b, c] = readFileSync("/proc/loadavg", "utf8").split(" ").map(Number);
  return [a!, b!, c!];
}

/** BENCH_REVISION, else `git describe --always --dirty`. */
export function revision(): string {
  if (process.env["BENCH_REVISION"]) return process.env["BENCH_REVISION"];
  try {
    return execFileSync("git", ["describe", "--always", "--dirty"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "unknown";
  }
}

/** Waits up to `maxS` for the 1-minute load average to drop below `quietLoad`; returns the load average then. */
export async function waitForQuietLoad(quietLoad: number, maxS: number, log: (line: string) => void): Promise<number> {
  const started = performance.now();
  let announced = false;
  while (loadAverage()[0] >= quietLoad && performance.now() - started < maxS * 1000) {
    if (!announced) log(`load average ${loadAverage()[0].toFixed(2)} ≥ ${quietLoad}: waiting up to ${maxS} s for it to drop …`);
    announced = true;
    await new Promise((r) => setTimeout(r, 5000));
  }
  return loadAverage()[0];
}

/** The machine a record was made on. */
export interface MachineFacts {
  readonly cores: number;
  readonly cpu: string;
  readonly memoryGb: number;
  readonly node: string;
}

export function machineFacts(): MachineFacts {
  return { cores: availableParallelism(), cpu: cpus()[0]?.model ?? "unknown CPU", memoryGb: Math.round(totalmem() / 2 ** 30), node: process.version };
}

/** Where every benchmark writes its records (and CPU profiles); the records are committed, docs/benchmarks.md is made of them. */
export const RESULTS_DIR = new URL("./results/", import.meta.url).pathname;

/** A name in RESULTS_DIR for what `bench` made at `at`: `<bench>-<ISO time>` plus `suffix`. */
export function resultPath(bench: string, at: Date, suffix = ""): string {
  return join(RESULTS_DIR, `${bench}-${at.toISOString().replace(/[:.]/g, "-")}${suffix}`);
}

/** /proc/loadavg (1, 5 and 15 minutes) when something started, and when it ended. */
export interface LoadSpan {
  readonly loadBefore: readonly number[];
  readonly loadAfter: readonly number[];
}

/**
 * What every record starts with, whatever the benchmark: what docs/benchmarks.md prints beside its figures (the load
 * of the whole run: from its start to the writing of its record). A record may extend `machine` (the peers' versions).
 */
export interface RecordHeader extends LoadSpan {
  readonly bench: string;
  /** `git describe --always --dirty` when the run started (BENCH_REVISION overrides it). */
  readonly revision: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly machine: MachineFacts;
}

/** One benchmark run: what it knew when it started, and the writer of its record. */
export interface BenchRun {
  readonly bench: string;
  readonly startedAt: Date;
  readonly revision: string;
  readonly loadBefore: readonly [number, number, number];
  /** Writes `record` under the run's header as JSON into RESULTS_DIR; returns the file's path. */
  write(record: object): Promise<string>;
}

/** Call when the benchmark starts: the revision, time and load average of its record are taken now. */
export function startRun(bench: string): BenchRun {
  // The roles a benchmark starts run dist/, as `npm start` does; a stale build would have them run the sources
  // through tsx, and the record would measure something no deployment runs.
  execFileSync(process.execPath, [fileURLToPath(new URL("../src/cli/build.js", import.meta.url)), "--if-stale"], { stdio: "inherit" });
  const startedAt = new Date();
  const run = { bench, startedAt, revision: revision(), loadBefore: loadAverage() };
  return {
    ...run,
    async write(record: object): Promise<string> {
      const header: RecordHeader = {
        bench,
        revision: run.revision,
        startedAt: startedAt.toISOString(),
        finishedAt: new Date().toISOString(),
        machine: machineFacts(),
        loadBefore: run.loadBefore,
        loadAfter: loadAverage(),
      };
      await mkdir(RESULTS_DIR, { recursive: true });
      const file = resultPath(bench, startedAt, ".json");
      await writeFile(file, `${JSON.stringify({ ...header, ...record }, null, 2)}\n`);
      return file;
    },
  };
}

/** Runs `main` when the module at `moduleUrl` is the script node was started with; a failure is printed, exit 1. */
export function runAsScript(moduleUrl: string, name: string, main: () => Promise<unknown>): void {
  if (moduleUrl !== `file://${process.argv[1]}`) return;
  main().catch((e: unknown) => {
    process.stderr.write(`${name}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
