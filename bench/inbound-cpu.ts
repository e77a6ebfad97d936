// `node_modules/.bin/node --import tsx bench/inbound-cpu.ts`: CPU per stored 10 KB message, by process and by
// thread, on the embedded stack of bench:inbound (smtp, api and worker roles in their own processes, one webhook
// endpoint at the bench's HTTPS receiver). Open loop at BENCH_CPU_RATE for BENCH_CPU_MESSAGES messages (to the
// organization with the webhook endpoint), drained (stored and every webhook delivered), metered from the first message to the drain's end:
// the smtp process's threads by name (/proc/<pid>/task/*/stat: the listener's event loop, the processing thread,
// the parser threads, libuv and V8's helpers), PostgreSQL (postmaster, its backends and what it reaped), the webhook
// receiver, the api and worker roles; and the store batches the round took (messages per store transaction). Rounds alternate nothing: to compare two revisions, run this script from each
// tree in turn, several times, and note the load average it prints beside every figure.
//
// Settings (env): BENCH_CPU_RATE=200  BENCH_CPU_MESSAGES=2000  BENCH_CPU_ROUNDS=2 (the first warms up, unmeasured)
//   BENCH_CPU_WEBHOOK=1 (0: to the organization without a webhook endpoint)  BENCH_INBOXES=100
//   BENCH_CPU_PROF=<dir> (the smtp role runs with --cpu-prof into <dir>; each thread writes a profile when it stops;
//   summarize them with bench/cpu-profile.ts)
//   BENCH_CPU_NODE_ARGS="--flag …" (more Node options of the smtp role, e.g. V8's heap sizes)
//   BENCH_CPU_GC=1 (each thread of the smtp role counts its isolate's collections, bench/gc-stats.mjs: the measured
//   round prints scavenges and mark-compacts per 1,000 stored messages by thread, their pauses per message (wall
//   time on the thread: a loaded machine stretches them), and the young and old generations' sizes; V8Worker's CPU
//   is the parallel and concurrent part of every isolate's collections)
//   BENCH_CPU_GC_REASONS=1 (the smtp role runs with V8's --trace-gc --trace-incremental-marking: the measured round
//   prints the listener's full collections per 1,000 stored messages by what started their marking — "task" is
//   V8's soft limit: the old generation's room below the young generation's capacity, where the external memory
//   (ArrayBuffers) allocated since the last full collection counts as old generation —, and by what finished them.
//   The tracing costs the process CPU: compare collection counts, not CPU, of runs with it)
//   BENCH_CPU_STATEMENTS=1 (a PostgreSQL of its own with pg_stat_statements, in place of the stack's; the measured round
//   prints every statement's calls per stored message and per webhook delivery, commits beside them: what each
//   message and each delivery costs in round trips; and the statements (those differing only in their row count
//   together) that took most of PostgreSQL's time per stored message, planning apart, and autovacuum's CPU by table
//   from its log. The extension costs PostgreSQL CPU: compare CPU figures of runs without it)
//   BENCH_CPU_WAL=1 (the measured round's WAL read back with pg_walinspect: records, full-page images and bytes per
//   stored message by relation — each table, its TOAST table, each index — and record type, and the records that
//   touch no relation (commits, …) by type: where the WAL of a stored message comes from)
// Every round also prints PostgreSQL's CPU by process kind, and WAL records, full-page images and bytes per stored
// message with the sessions opened (pg_stat_wal, pg_stat_database).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { loadConfig } from "../src/config.js";
import { startEmbeddedPostgres } from "../src/runtime/embedded-postgres.js";
import { runInboundClient } from "./inbound-client.js";
import { startOurStack } from "./inbound-ours.js";
import { loadAverage } from "./machine.js";
import { processTree, reapedTicks } from "./processes.js";
import { envNumber } from "./settings.js";
import { Teardown } from "./stack.js";

const RATE = envNumber(process.env, "BENCH_CPU_RATE", 200, 1, 5000);
const MESSAGES = envNumber(process.env, "BENCH_CPU_MESSAGES", 2000, 1, 100_000);
const ROUNDS = envNumber(process.env, "BENCH_CPU_ROUNDS", 2, 1, 10);
const WEBHOOK = process.env["BENCH_CPU_WEBHOOK"] !== "0";
const INBOXES = envNumber(process.env, "BENCH_INBOXES", 100, 1, 10_000);
const PROFILE_DIR = process.env["BENCH_CPU_PROF"];
const STATEMENTS = process.env["BENCH_CPU_STATEMENTS"] === "1";
const WAL = process.env["BENCH_CPU_WAL"] === "1";
/** WAL rows (relation and record type) listed per stored message. */
const TOP_WAL_ROWS = 40;
const GC = process.env["BENCH_CPU_GC"] === "1";
const GC_REASONS = process.env["BENCH_CPU_GC_REASONS"] === "1";
/** Statements listed by their share of PostgreSQL's time. */
const TOP_STATEMENTS = 15;
const DRAIN_MAX_S = 120;
const TICK_MS = 10;
/** Backends flush their statistics at most this long after a transaction (PGSTAT_MIN_INTERVAL is 1 s). */
const STATS_FLUSH_MS = 1500;

/**
 * Rows inserted, updated and deleted per table, and of the updates those that were HOT (no index entry written), and
 * the database's commits (as "commits": [n, 0, 0, 0]).
 */
async function tableCounters(client: pg.Client): Promise<Map<string, number[]>> {
  await client.query("select pg_stat_clear_snapshot()");
  const { rows } = await client.query<{ name: string; ins: string; upd: string; del: string; hot: string }>(
    `select relname as name, n_tup_ins::text as ins, n_tup_upd::text as upd, n_tup_del::text as del, n_tup_hot_upd::text as hot
       from pg_stat_user_tables
     union all select 'commits', xact_commit::text, '0', '0', '0' from pg_stat_database where datname = current_database()`,
  );
  return new Map(rows.map((r) => [r.name, [Number(r.ins), Number(r.upd), Number(r.del), Number(r.hot)]]));
}

/** The current WAL insert position (for pg_walinspect). */
async function walPosition(client: pg.Client): Promise<string> {
  return (await client.query<{ lsn: string }>(`select pg_current_wal_insert_lsn()::text as lsn`)).rows[0]!.lsn;
}

/**
 * The WAL between two positions by relation (a TOAST table or its index named after its table) and record type, per
 * stored message: records, full-page images and their bytes, and the bytes of the records; then the records that
 * touch no block (commits, …) by type. A record touching several relations counts once for each.
 */
async function printWalByRelation(client: pg.Client, from: string, to: string, stored: number, log: (line: string) => void): Promise<void> {
  const { rows } = await client.query<{ relation: string; type: string; records: string; fpi: string; fpi_bytes: string; bytes: string }>(
    `with blocks as (
       select b.start_lsn, b.relfilenode, b.reltablespace, b.resource_manager || '/' || b.record_type as type,
              b.block_fpi_length, b.record_length
         from pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false) b
        where b.reldatabase = (select oid from pg_database where datname = current_database()) and b.relforknumber = 0),
     named as (
       select b.*, c.relkind, n.nspname, c.relname
         from blocks b
         left join pg_class c on c.oid = pg_filenode_relation(b.reltablespace, b.relfilenode)
         left join pg_namespace n on n.oid = c.relnamespace)
     select case when nspname = 'pg_toast'
                 then coalesce((substring(relname from 'pg_toast_([0-9]+)')::oid)::regclass::text, relname)
                      || case when relkind = 'i' then ' (TOAST index)' else ' (TOAST)' end
                 else coalesce(relname, 'filenode ' || relfilenode) end as relation,
            type, count(distinct start_lsn)::text as records, count(*) filter (where block_fpi_length > 0)::text as fpi,
            sum(block_fpi_length)::text as fpi_bytes, sum(record_length)::text as bytes
       from named group by 1, 2 order by count(distinct start_lsn) desc`,
    [from, to],
  );
  const per = (n: string | number) => (Number(n) / Math.max(1, stored)).toFixed(2).padStart(8);
  log(`WAL per stored message by relation and record type (pg_walinspect: records, full-page images, FPI bytes, record bytes):`);
  const byRelation = new Map<string, number>();
  for (const r of rows) byRelation.set(r.relation, (byRelation.get(r.relation) ?? 0) + Number(r.records));
  for (const [relation, records] of [...byRelation].sort((a, b) => b[1] - a[1])) log(`  ${per(records)}  ${relation}`);
  log(`  by record type:`);
  for (const r of rows.slice(0, TOP_WAL_ROWS)) {
    log(`  ${per(r.records)} ${per(r.fpi)} ${per(r.fpi_bytes)} ${per(r.bytes)}  ${r.relation}: ${r.type}`);
  }
  const { rows: kinds } = await client.query<{ type: string; records: string; bytes: string }>(
    `select "resource_manager/record_type" as type, count::text as records, combined_size::text as bytes
       from pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) where count > 0 order by count desc`,
    [from, to],
  );
  log(`  all records by type (pg_get_wal_stats: records, bytes):`);
  for (const k of kinds) log(`  ${per(k.records)} ${per(k.bytes)}  ${k.type}`);
}

/**
 * A PostgreSQL of this run's own with pg_stat_statements loaded (it needs the library at start: set, then started
 * again on the same data directory), given to the stack as DATABASE_URL; answers its postmaster's pid.
 */
async function postgresWithStatementStatistics(workDir: string, teardown: Teardown): Promise<number> {
  const dataDir = join(workDir, "statements");
  let postgres = await startEmbeddedPostgres({ dataDir });
  const setup = new pg.Client({ connectionString: postgres.url });
  await setup.connect();
  await setup.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
  // Planning counted apart; every autovacuum logged with its CPU (noteAutovacuum).
  await setup.query(`alter system set pg_stat_statements.track_planning = on`);
  await setup.query(`alter system set log_autovacuum_min_duration = 0`);
  await setup.end();
  await postgres.stop();
  postgres = await startEmbeddedPostgres({ dataDir, port: Number(new URL(postgres.url).port), log: noteAutovacuum });
  const running = postgres;
  teardown.add(() => running.stop());
  const again = new pg.Client({ connectionString: postgres.url });
  await again.connect();
  await again.query(`create extension if not exists pg_stat_statements`);
  await again.end();
  process.env["DATABASE_URL"] = postgres.url;
  return postgres.pid;
}

/** Every statement of the mailbox database since `since`, by calls per stored message and per webhook delivery. */
async function printStatements(url: string, stored: number, deliveries: number, commits: number, log: (line: string) => void): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ query: string; calls: string; ms: string }>(
      `select query, calls::text, round((total_exec_time + total_plan_time)::numeric, 1)::text as ms
         from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
        order by calls desc`,
    );
    const per = (n: number, of: number) => (n / Math.max(1, of)).toFixed(3).padStart(7);
    log(`statements (pg_stat_statements: calls per stored message, per webhook delivery; ${deliveries} deliveries; exec+plan ms):`);
    log(`  ${per(commits, stored)} ${per(commits, deliveries)}  commits (pg_stat_database, read-only ones too)`);
    for (const r of rows.sort((a, b) => Number(b.calls) - Number(a.calls))) {
      const calls = Number(r.calls);
      if (calls / Math.max(1, stored) < 0.005) continue;
      log(`  ${per(calls, stored)} ${per(calls, deliveries)}  ${r.ms.padStart(8)} ms  ${r.query.replace(/\s+/g, " ").slice(0, 140)}`);
    }
  } finally {
    await client.end();
  }
}

/** Ticks of each live process of `pids`, with what its title says it is (backends, walwriter, checkpointer, …). */
function ticksByPid(pids: readonly number[]): Map<number, { kind: string; ticks: number }> {
  const byPid = new Map<number, { kind: string; ticks: number }>();
  for (const pid of pids) {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
      const kind =
        /^postgres: (walwriter|checkpointer|background writer|autovacuum launcher|autovacuum worker|walsummarizer|io worker|logical replication launcher)/.exec(title)?.[1] ??
        (title.startsWith("postgres: ") ? "backends" : "postmaster");
      const text = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      byPid.set(pid, { kind, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // gone
    }
  }
  return byPid;
}

/** Ticks during the round by process kind, of the processes alive at its end (they may have started during it). */
function ticksByKind(before: Map<number, { ticks: number }>, after: Map<number, { kind: string; ticks: number }>): Map<string, number> {
  const byKind = new Map<string, number>();
  for (const [pid, { kind, ticks }] of after) byKind.set(kind, (byKind.get(kind) ?? 0) + ticks - (before.get(pid)?.ticks ?? 0));
  return byKind;
}

/** WAL written so far (pg_stat_wal), and the sessions the database has had. */
async function walCounters(client: pg.Client): Promise<{ records: number; fpi: number; bytes: number; sessions: number }> {
  await client.query("select pg_stat_clear_snapshot()");
  const [row] = (
    await client.query<{ records: string; fpi: string; bytes: string; sessions: string }>(
      `select wal_records::text as records, wal_fpi::text as fpi, wal_bytes::text as bytes,
              (select sessions::text from pg_stat_database where datname = current_database()) as sessions from pg_stat_wal`,
    )
  ).rows;
  return { records: Number(row!.records), fpi: Number(row!.fpi), bytes: Number(row!.bytes), sessions: Number(row!.sessions) };
}

/** CPU seconds autovacuum and autoanalyze reported in the log ("system usage: CPU: user: x s, system: y s"), by table. */
const autovacuumCpu = new Map<string, number>();
function noteAutovacuum(line: string): void {
  const table = /automatic (?:vacuum|analyze) of table "([^"]+)"/.exec(line)?.[1];
  if (table) lastAutovacuumTable = table;
  const cpu = /CPU: user: ([\d.]+) s, system: ([\d.]+) s/.exec(line);
  if (cpu && lastAutovacuumTable) {
    autovacuumCpu.set(lastAutovacuumTable, (autovacuumCpu.get(lastAutovacuumTable) ?? 0) + Number(cpu[1]) + Number(cpu[2]));
    lastAutovacuumTable = undefined;
  }
}
let lastAutovacuumTable: string | undefined;

/** The statements that took most of PostgreSQL's time (planning + execution, waits included) per stored message. */
async function printCostliestStatements(client: pg.Client, stored: number, log: (line: string) => void): Promise<void> {
  const { rows } = await client.query<{ query: string; calls: string; ms: string; plan_ms: string }>(
    `select query, calls::text, (total_exec_time + total_plan_time)::text as ms, total_plan_time::text as plan_ms
       from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())`,
  );
  // A multi-row statement has a text per row count: summed by its start.
  const families = new Map<string, { query: string; calls: number; ms: number; planMs: number }>();
  for (const r of rows) {
    const key = r.query.replace(/\s+/g, " ").slice(0, 60);
    const f = families.get(key) ?? { query: r.query, calls: 0, ms: 0, planMs: 0 };
    f.calls += Number(r.calls);
    f.ms += Number(r.ms);
    f.planMs += Number(r.plan_ms);
    families.set(key, f);
  }
  const per = (n: number) => (n / Math.max(1, stored)).toFixed(3).padStart(6);
  log(`statements by PostgreSQL time per stored message (planning + execution ms, waits included; planning; calls):`);
  for (const f of [...families.values()].sort((a, b) => b.ms - a.ms).slice(0, TOP_STATEMENTS)) {
    log(`  ${per(f.ms)} ms (plan ${per(f.planMs)})  ${per(f.calls)} calls  ${f.query.replace(/\s+/g, " ").slice(0, 140)}`);
  }
}

/** utime + stime ticks of each thread of `pid`, by thread name (several threads of one name summed). */
function threadTicks(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      // The main thread's task id is the process id.
      const key = tid === String(pid) ? "main (listener)" : name;
      byName.set(key, (byName.get(key) ?? 0) + Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended
    }
  }
  return byName;
}

/** Ticks of live processes, plus what `reaper` reaped (its exited children). */
function groupTicks(pids: readonly number[], reaper?: number): number {
  let sum = reaper === undefined ? 0 : reapedTicks(reaper);
  for (const pid of pids) {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      sum += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return sum;
}

/** Each thread's collections so far, by thread name (files of bench/gc-stats.mjs; threads of one name summed). */
type GcCounts = Record<string, [number, number]>;
interface GcThread {
  readonly counts: GcCounts;
  readonly young: [number, number];
  readonly old: [number, number];
}
function gcByThread(dir: string): Map<string, GcThread> {
  const byThread = new Map<string, GcThread>();
  for (const name of readdirSync(dir)) {
    let read: { thread: string } & GcThread;
    try {
      read = JSON.parse(readFileSync(join(dir, name), "utf8")) as typeof read;
    } catch {
      continue; // being rewritten: the next reading has it
    }
    const sum = byThread.get(read.thread);
    if (!sum) {
      byThread.set(read.thread, read);
      continue;
    }
    for (const [kind, [n, ms]] of Object.entries(read.counts)) sum.counts[kind] = [sum.counts[kind]![0] + n, sum.counts[kind]![1] + ms];
  }
  return byThread;
}

/** Collections during the round per 1,000 stored messages, and their pauses per message, by thread. */
function printGc(before: Map<string, GcThread>, after: Map<string, GcThread>, stored: number, log: (line: string) => void): void {
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  log(`garbage collection by thread (per 1,000 stored messages; their pauses' wall ms per message; young and old generation used/size MB at the end, of one thread of each name):`);
  for (const [thread, { counts, young, old }] of after) {
    const was = before.get(thread)?.counts;
    const kind = (k: string) => {
      const n = counts[k]![0] - (was?.[k]?.[0] ?? 0);
      const ms = counts[k]![1] - (was?.[k]?.[1] ?? 0);
      return `${((n * 1000) / Math.max(1, stored)).toFixed(1).padStart(5)} (${(ms / Math.max(1, stored)).toFixed(3)} ms)`;
    };
    log(`  ${thread.padEnd(18)} scavenges ${kind("scavenge")}  mark-compacts ${kind("markCompact")}  young ${mb(young[1])}/${mb(young[0])}  old ${mb(old[1])}/${mb(old[0])}`);
  }
}

/** Bytes in a file so far; 0 when it is not there yet. */
function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * The listener's full collections in V8's trace (--trace-gc --trace-incremental-marking) by what started their
 * marking and by what finished them. The listener's isolate is the first the trace names: the main thread's starts
 * before any worker's.
 */
function printGcReasons(file: string, from: number, to: number, stored: number, log: (line: string) => void): void {
  const all = readFileSync(file);
  const main = /^\[\d+:(0x[0-9a-f]+)/m.exec(all.toString("latin1"))?.[1];
  if (!main) return log(`listener's full collections: no V8 trace in ${file}`);
  const round = all.subarray(from, to).toString("latin1");
  const started = new Map<string, number>();
  const finished = new Map<string, number>();
  const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  for (const line of round.split("\n")) {
    if (!line.startsWith(`[`) || !line.includes(`:${main}`)) continue;
    const start = /\[IncrementalMarking\] Start \(([^)]*)\)/.exec(line);
    if (start) count(started, start[1]!);
    const markCompact = /Mark-Compact .*current mu = [0-9.]+\) ([^;]*)/.exec(line);
    if (markCompact) count(finished, markCompact[1]!.trim());
  }
  const per = (n: number) => ((n * 1000) / Math.max(1, stored)).toFixed(1);
  const list = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${per(n)}`).join(", ") || "none";
  log(`listener's incremental markings by start reason (per 1,000 stored messages): ${list(started)}`);
  log(`listener's full collections by what ended them (per 1,000 stored messages): ${list(finished)}`);
}

/** How long gc-stats.mjs takes at most to rewrite its counts. */
const GC_STATS_MS = 300;

const teardown = new Teardown();
const workDir = await mkdtemp(join(tmpdir(), "bench-cpu-"));
teardown.add(() => rm(workDir, { recursive: true, force: true }));
const gcDir = join(workDir, "gc");
const smtpStdout = join(workDir, "smtp.stdout");
if (GC) {
  await mkdir(gcDir);
  process.env["BENCH_GC_DIR"] = gcDir;
}
try {
  const statementsPostmaster = STATEMENTS ? await postgresWithStatementStatistics(workDir, teardown) : undefined;
  const config = loadConfig(process.env);
  const log = (line: string) => console.log(line);
  const stack = await startOurStack(
    {
      workDir,
      config,
      inboxes: INBOXES,
      maxConnections: 300,
      webhookRetryInitialMs: 1000,
      log,
      smtpNodeArgs: [
        ...(PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`] : []),
        ...(GC ? ["--import", fileURLToPath(new URL("./gc-stats.mjs", import.meta.url))] : []),
        ...(GC_REASONS ? ["--trace-gc", "--trace-incremental-marking"] : []),
        ...(process.env["BENCH_CPU_NODE_ARGS"]?.split(/\s+/).filter(Boolean) ?? []),
      ],
      ...(GC_REASONS ? { smtpStdout } : {}),
    },
    teardown,
  );
  const recipients = WEBHOOK ? stack.withWebhook : stack.withoutWebhook;
  const postmaster = statementsPostmaster ?? stack.infra.postmasterPid!;
  const client = new pg.Client({ connectionString: stack.infra.databaseUrl });
  await client.connect();
  teardown.add(() => client.end());
  const drain = async () => {
    for (let i = 0; i < DRAIN_MAX_S * 5; i++) {
      const b = await stack.stats.backlog();
      if (b.raw + b.deliveries === 0) return true;
      await sleep(200);
    }
    return false;
  };
  for (let round = 0; round < ROUNDS; round++) {
    const measured = round === ROUNDS - 1;
    await drain();
    if (GC) await sleep(GC_STATS_MS);
    const gcBefore = GC ? gcByThread(gcDir) : new Map<string, GcThread>();
    const traceBefore = GC_REASONS ? sizeOf(smtpStdout) : 0;
    const load = loadAverage()[0];
    const smtpBefore = threadTicks(stack.smtp.pid);
    const pgBefore = groupTicks(processTree(postmaster), postmaster);
    const pgPidsBefore = ticksByPid(processTree(postmaster));
    const walBefore = await walCounters(client);
    autovacuumCpu.clear();
    const others = { receiver: [stack.receiver.pid], "api+worker": [stack.api.pid, stack.worker.pid] };
    const othersBefore = Object.fromEntries(Object.entries(others).map(([k, pids]) => [k, groupTicks(pids)]));
    const storedBefore = await stack.stats.storedMessages();
    if (STATEMENTS) await client.query(`select pg_stat_statements_reset()`);
    if (WAL && measured) await client.query(`create extension if not exists pg_walinspect`);
    const walFrom = WAL && measured ? await walPosition(client) : undefined;
    const tablesBefore = await tableCounters(client);
    const started = performance.now();
    const startedAt = Date.now();
    const result = await runInboundClient({
      mode: "open",
      host: "127.0.0.1",
      port: stack.smtpPort,
      sessions: 20,
      rate: RATE,
      count: MESSAGES,
      durationS: Math.ceil(MESSAGES / RATE) + 10,
      from: "bench-sender@load.localhost",
      recipients,
      messageBytes: 10_240,
    });
    const drained = await drain();
    const seconds = (performance.now() - started) / 1000;
    const smtpAfter = threadTicks(stack.smtp.pid);
    if (GC) await sleep(GC_STATS_MS);
    const gcAfter = GC ? gcByThread(gcDir) : new Map<string, GcThread>();
    const traceAfter = GC_REASONS ? sizeOf(smtpStdout) : 0;
    const pgAfter = groupTicks(processTree(postmaster), postmaster);
    const pgKinds = ticksByKind(pgPidsBefore, ticksByPid(processTree(postmaster)));
    const walAfter = await walCounters(client);
    const walTo = walFrom ? await walPosition(client) : undefined;
    const othersAfter = Object.fromEntries(Object.entries(others).map(([k, pids]) => [k, groupTicks(pids)]));
    const stored = (await stack.stats.storedMessages()) - storedBefore;
    await sleep(STATS_FLUSH_MS);
    const tablesAfter = await tableCounters(client);
    if (!measured) {
      log(`warm-up: ${result.accepted} accepted, ${stored} stored`);
      continue;
    }
    const ms = (ticks: number) => ((ticks * TICK_MS) / Math.max(1, stored)).toFixed(2);
    log(
      `${RATE} msg/s offered, ${result.accepted} accepted (${result.failed} failed), ${stored} stored${drained ? "" : " (NOT drained)"}, ` +
        `${seconds.toFixed(1)} s, load ${load.toFixed(2)} → ${loadAverage()[0].toFixed(2)}, webhook ${WEBHOOK ? "yes" : "no"}`,
    );
    log(`CPU ms per stored message:`);
    let smtpSum = 0;
    const rows = [...smtpAfter].map(([name, t]) => [name, t - (smtpBefore.get(name) ?? 0)] as const).sort((a, b) => b[1] - a[1]);
    for (const [name, t] of rows) {
      smtpSum += t;
      if (t > 0) log(`  smtp ${name.padEnd(20)} ${ms(t)}`);
    }
    log(`  smtp (all threads)        ${ms(smtpSum)}`);
    if (GC) printGc(gcBefore, gcAfter, stored, log);
    if (GC_REASONS) printGcReasons(smtpStdout, traceBefore, traceAfter, stored, log);
    log(`  PostgreSQL                ${ms(pgAfter - pgBefore)}`);
    let liveSum = 0;
    for (const [kind, d] of pgKinds) {
      liveSum += d;
      if (d > 0) log(`    ${kind.padEnd(23)} ${ms(d)}`);
    }
    // The reaped: autovacuum workers, closed connections (what they used during the round only).
    log(`    exited during the round   ${ms(pgAfter - pgBefore - liveSum)}`);
    for (const [table, seconds] of autovacuumCpu) log(`    autovacuum/analyze of ${table} (its log) ${ms(seconds * 100)}`);
    const per = (n: number) => (n / Math.max(1, stored)).toFixed(2);
    log(`  WAL per stored message: ${per(walAfter.records - walBefore.records)} records, ${per(walAfter.fpi - walBefore.fpi)} full-page images, ${per(walAfter.bytes - walBefore.bytes)} bytes; ${walAfter.sessions - walBefore.sessions} sessions opened`);
    for (const k of Object.keys(others)) log(`  ${k.padEnd(25)} ${ms(othersAfter[k]! - othersBefore[k]!)}`);
    // A delivery claimed in its store transaction keeps last_attempt_at = created_at; one that found no prompt slot
    // free then was claimed by a transaction of its own later (deliveries.ts), at a later time.
    const [paths] = (
      await client.query<{ claimed: string; later: string }>(
        `select count(*) filter (where last_attempt_at = created_at)::text as claimed,
                count(*) filter (where last_attempt_at > created_at)::text as later
           from webhook_deliveries where created_at >= $1`,
        [new Date(startedAt)],
      )
    ).rows;
    // Each store transaction gives its events one time (the batch's), so the round's distinct event times count its
    // batches (two in one millisecond count as one: rough at high rates).
    const [batches] = (
      await client.query<{ batches: string; events: string }>(
        `select count(distinct created_at)::text as batches, count(*)::text as events from events where created_at >= $1`,
        [new Date(startedAt)],
      )
    ).rows;
    log(`store batches: ${batches!.batches} for ${batches!.events} messages (${(Number(batches!.events) / Math.max(1, Number(batches!.batches))).toFixed(2)} a batch)`);
    log(`webhook deliveries: ${paths!.claimed} claimed in their store transaction, ${paths!.later} claimed later by a transaction of their own`);
    log(`PostgreSQL per stored message (rows inserted/updated/deleted/of the updates HOT, commits; statistics flushed late under load: rough):`);
    for (const [name, after] of tablesAfter) {
      const before = tablesBefore.get(name) ?? [0, 0, 0, 0];
      const per = after.map((n, i) => ((n - before[i]!) / Math.max(1, stored)).toFixed(2));
      if (after.some((n, i) => n !== before[i])) log(`  ${name.padEnd(25)} ${per.join(" / ")}`);
    }
    if (walFrom && walTo) await printWalByRelation(client, walFrom, walTo, stored, log);
    if (STATEMENTS) {
      const commits = tablesAfter.get("commits")![0]! - tablesBefore.get("commits")![0]!;
      await printStatements(stack.infra.databaseUrl, stored, Number(paths!.claimed) + Number(paths!.later), commits, log);
      await printCostliestStatements(client, stored, log);
    }
  }
} finally {
  await teardown.run();
}
