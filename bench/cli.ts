// How long the `mailbox` command takes, beside `node -e 0` (what any Node program pays to start): --help and two
// operator commands from the build in dist/, and the same from the sources through tsx (how every command ran
// before the build). Runs are interleaved so a change in the machine's load touches every command alike; medians
// are printed side by side with the CPU each command used.
//
//   npm run bench:cli [-- --runs N]     DATABASE_URL: an existing PostgreSQL, else an embedded one in a temp dir
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startEmbeddedPostgres } from "../src/runtime/embedded-postgres.js";
import { loadAverage, startRun, type RecordHeader } from "./machine.js";
import { median } from "./report.js";

const ROOT = new URL("../", import.meta.url).pathname;
const MAILBOX = join(ROOT, "src/cli/mailbox.js");
/** The sources through tsx, as src/cli/mailbox.js ran every command before there was a build. */
const FROM_SOURCES = [
  "--import",
  "tsx",
  "--input-type=module",
  "-e",
  `const { main } = await import(${JSON.stringify(join(ROOT, "src/cli/main.ts"))}); process.exit(await main(process.argv.slice(1)));`,
];

interface Case {
  readonly name: string;
  readonly args: readonly string[];
  /** The target for the median, in ms. */
  readonly targetMs?: number;
}

/** One command's figures over the runs. */
export interface CliRow {
  readonly name: string;
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly cpuMs: number;
  readonly targetMs: number | null;
  readonly meetsTarget: boolean | null;
}

/** What bench/results/cli-<time>.json holds. */
export interface CliRecord extends RecordHeader {
  readonly runs: number;
  readonly rows: readonly CliRow[];
}

const CASES: readonly Case[] = [
  { name: "node -e 0", args: ["-e", "0"] },
  { name: "mailbox --help", args: [MAILBOX, "--help"], targetMs: 300 },
  { name: "mailbox admin org list", args: [MAILBOX, "admin", "org", "list"], targetMs: 700 },
  { name: "mailbox admin org create", args: [MAILBOX, "admin", "org", "create", "--name", "bench"], targetMs: 700 },
  { name: "sources via tsx: --help", args: [...FROM_SOURCES, "--help"] },
  { name: "sources via tsx: admin org list", args: [...FROM_SOURCES, "admin", "org", "list"] },
];

/** CPU time (user + system) of the waited-for children of this process, in ms: /proc/self/stat cutime + cstime. */
function childrenCpuMs(): number {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  // After "pid (comm) ": state is field 3, so cutime (16) and cstime (17) are at 13 and 14; clock ticks of 10 ms.
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

function runOnce(c: Case, env: NodeJS.ProcessEnv): { wallMs: number; cpuMs: number } {
  const cpuBefore = childrenCpuMs();
  const started = performance.now();
  const result = spawnSync(process.execPath, c.args, { cwd: ROOT, env, encoding: "utf8", timeout: 60_000 });
  const wallMs = performance.now() - started;
  if (result.status !== 0) throw new Error(`${c.name} exited ${result.status ?? result.signal}: ${result.stderr.trim()}`);
  return { wallMs, cpuMs: childrenCpuMs() - cpuBefore };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: "string", default: "10" } } });
  const runs = Number(values.runs);
  const build = spawnSync(process.execPath, [join(ROOT, "src/cli/build.js"), "--if-stale"], { stdio: "inherit" });
  if (build.status !== 0) throw new Error("the build failed");

  const dataDir = await mkdtemp(join(tmpdir(), "mailbox-bench-cli-"));
  const pg = process.env["DATABASE_URL"] ? undefined : await startEmbeddedPostgres({ dataDir });
  try {
    const env = { ...process.env, DATABASE_URL: process.env["DATABASE_URL"] ?? pg!.url, DATA_DIR: dataDir, LOG_LEVEL: "error" };
    runOnce({ name: "mailbox migrate", args: [MAILBOX, "migrate"] }, env);
    // The record's time, revision and load average are those of the measuring, after the build and the migration.
    const run = startRun("cli");
    const figures = new Map(CASES.map((c) => [c.name, [] as { wallMs: number; cpuMs: number }[]]));
    for (let i = 0; i < runs; i++) for (const c of CASES) figures.get(c.name)!.push(runOnce(c, env));
    const loadAfter = loadAverage();

    const rows = CASES.map((c): CliRow => {
      const f = figures.get(c.name)!;
      const wall = median(f.map((x) => x.wallMs));
      return {
        name: c.name,
        medianMs: Math.round(wall),
        minMs: Math.round(Math.min(...f.map((x) => x.wallMs))),
        maxMs: Math.round(Math.max(...f.map((x) => x.wallMs))),
        cpuMs: Math.round(median(f.map((x) => x.cpuMs))),
        targetMs: c.targetMs ?? null,
        meetsTarget: c.targetMs === undefined ? null : wall <= c.targetMs,
      };
    });
    const pad = (s: string | number, n: number) => String(s).padStart(n);
    console.log(`\n${runs} runs each, interleaved; load average ${run.loadBefore[0]} before, ${loadAfter[0]} after (2 cores); revision ${run.revision}\n`);
    console.log(`${"command".padEnd(34)}${pad("median ms", 11)}${pad("min", 7)}${pad("max", 7)}${pad("cpu ms", 8)}${pad("target", 8)}`);
    for (const r of rows) {
      const target = r.targetMs === null ? "" : `${r.meetsTarget ? "≤" : ">"}${r.targetMs}`;
      console.log(`${r.name.padEnd(34)}${pad(r.medianMs, 11)}${pad(r.minMs, 7)}${pad(r.maxMs, 7)}${pad(r.cpuMs, 8)}${pad(target, 8)}`);
    }
    const file = await run.write({ runs, rows });
    console.log(`\n${file}`);
  } finally {
    await pg?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
