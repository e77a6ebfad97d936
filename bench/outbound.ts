// `npm run bench:outbound`: sending through our JSON API (api, worker and smtp roles on the embedded PostgreSQL
// and Temporal dev server; the worker makes each first attempt itself, a `deliver/<submissionId>` workflow retries
// only what a first attempt deferred) beside the same messages submitted
// over SMTP to Postfix (Debian's, a relay instance of its own), both delivering to the same bench sink
// (bench/outbound-sink.ts, smtp-server on 127.0.0.1). Loopback only; every loop bounded in count and time.
//
//   accept      closed loop, BENCH_ACCEPT_CLIENTS (16) clients for BENCH_ACCEPT_S: ours request → 202, Postfix
//               MAIL FROM → 250 after DATA (the whole submission transaction) p50/p99, and accepted msg/s; then
//               for half as long with 1 client (service time without queueing), and (ours) with 16 clients while
//               the worker is stopped (SIGSTOP, resumed for the drain): acceptance without delivery beside it
//   latency     open loop at BENCH_LATENCY_RATE (20 msg/s) for BENCH_LATENCY_S: accepted (202 / 250) → received by
//               the sink (final dot at the sink), matched by Message-ID (ours: message.internetMessageId of the 202;
//               Postfix: the one the bench sets), the token in the Subject as a fallback
//   deferral    at BENCH_DEFERRAL_RATE (that of the latency run unless set) for BENCH_DEFERRAL_S, a clean run and
//               right after it one with every BENCH_DEFER_EVERY-th message (10%) to a recipient the sink answers 451
//               at RCPT on its first BENCH_DEFER_ATTEMPTS attempts: accepted → received of the other 90% beside the
//               clean run's, and how long the deferred ones took
//   floor       ours only, once: what one workflow per message would cost on the same Temporal dev server when it
//               does nothing (bench/outbound-floor.ts: an empty workflow, one and two no-op activities — the shape
//               a delivery had — and two local activities; BENCH_FLOOR_COUNT at BENCH_FLOOR_RATE each): server and
//               worker CPU per workflow, what a deferred message's workflow adds and why first attempts have none
//   throughput  open loop stepping the offered rate (BENCH_STEPS) for BENCH_STEP_S each: the sink's received msg/s
//               in the second half of each step; a step holds when acceptance and delivery both keep ≥ 95% of the
//               offered rate with no errors; stepping stops at the first step that does not (where it breaks);
//               the worker's RSS (and Temporal's, Postfix's PSS) sampled every second
//
// Every system drains (the sink got every accepted message) before its next run, at most BENCH_DRAIN_MAX_S, and
// stops waiting earlier when nothing arrived for 30 s. Runs alternate which system goes first. Medians over
// BENCH_RUNS runs; a default run takes about half an hour.
//
// Settings (env): BENCH_SYSTEMS=ours,postfix  BENCH_SCENARIOS=accept,latency,deferral,throughput  BENCH_RUNS=3
//   BENCH_THROUGHPUT_RUNS (BENCH_RUNS)  BENCH_ACCEPT_S=10  BENCH_ACCEPT_CLIENTS=16  BENCH_LATENCY_S=30
//   BENCH_LATENCY_RATE=20  BENCH_DEFERRAL_S=30  BENCH_DEFERRAL_RATE  BENCH_DEFER_EVERY=10  BENCH_DEFER_ATTEMPTS=2  BENCH_RETRY_INITIAL=2s
//   BENCH_STEPS=10,20,35,50,70,100,140,200,280,400,560,800  BENCH_STEP_S=15  BENCH_OPEN_CONCURRENCY=64  BENCH_TEXT_BYTES=1024
//   BENCH_INBOXES=16  BENCH_DRAIN_MAX_S=120  BENCH_WARMUP_S=5  BENCH_SINK_GREETING_MS=0  BENCH_SINK_DOMAIN=bench-sink.test
//   BENCH_FLOOR_COUNT=150  BENCH_FLOOR_RATE=15  BENCH_LOAD_WAIT_S=120  BENCH_CPU_PROF=1 (profile the api and worker roles; summaries printed)  LOG_LEVEL (of our
//   roles; error)
import { spawn } from "node:child_process";
import { chmod, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { loadConfig } from "../src/config.js";
import { findFreePort } from "../src/runtime/free-port.js";
import { loadAverage, machineFacts, resultPath, startRun, waitForQuietLoad } from "./machine.js";
import { startCpuMeter, waitForQuiet, withChildren, type CpuShare, type ProcessGroups } from "./cpu.js";
import type { FloorJob, FloorShape } from "./outbound-floor.js";
import { runOutboundClient, tokenInSubject, type OutboundJob, type OutboundResult, type SendRecord } from "./outbound-client.js";
import { profileIds, summarizeCpuProfile } from "./cpu-profile.js";
import { roleLogs } from "./inbound-ours.js";
import { getSubmission, startOurOutboundStack, type OurOutboundStack } from "./outbound-ours.js";
import { startPostfixRelay, type PostfixRelay } from "./outbound-postfix.js";
import { ensurePostfix } from "./postfix.js";
import { formatOutboundReport, type OutboundReport, type RunRecord, type StepRecord, type SystemName } from "./outbound-report.js";
import type { SinkRecord } from "./outbound-sink.js";
import { startSink, type Sink } from "./outbound-sink-process.js";
import { pssKb, reapedTicks, statusKb } from "./processes.js";
import { percentile } from "./run-report.js";
import { envList, envNumber } from "./settings.js";
import { Teardown } from "./stack.js";
import { epochNow } from "./clock.js";

const SCENARIOS = ["accept", "latency", "deferral", "throughput", "floor"] as const;
type ScenarioName = (typeof SCENARIOS)[number];
const SYSTEMS: Readonly<Record<string, SystemName>> = { ours: "ours", postfix: "Postfix" };
const SENDER = "agent@bench.localhost";
/** Before a run, up to this long for a second with at most QUIET_CORES busy. */
const QUIET_CORES = 0.3;
const MAX_QUIET_WAIT_MS = 5_000;
const QUIET_LOAD = 1.5;
/** CPU profiles count from these frames on (the api: Node's HTTP server; the worker's main thread: an activity). */
const ROLE_WORK = /node:_http_server|\/src\/temporal\/activities\/|\/src\/outbound\//;
/** A drain gives up when nothing arrived at the sink for this long. */
const STALL_MS = 30_000;
/**
 * A step holds when every message was accepted, acceptance kept HOLD_SHARE of the offered rate, the sink's rate in
 * the step's second half kept RECEIVED_SHARE of it (a window of a few seconds at a low rate is noisy), and the
 * backlog left at the end of the step reached the sink within HOLD_DRAIN_S (a system that keeps up has only what
 * is in flight left; one that falls behind has seconds of work queued).
 */
const HOLD_SHARE = 0.95;
const RECEIVED_SHARE = 0.9;
const HOLD_DRAIN_S = 2;
/** Submissions read back through GET /v1/submissions/{id} after a run (ours). */
const SUBMISSION_SAMPLE = 20;

export interface Settings {
  readonly systems: readonly SystemName[];
  readonly scenarios: readonly ScenarioName[];
  readonly runs: number;
  readonly throughputRuns: number;
  readonly acceptS: number;
  readonly acceptClients: number;
  readonly latencyS: number;
  readonly latencyRate: number;
  readonly deferralS: number;
  readonly deferralRate: number;
  readonly deferEvery: number;
  readonly deferAttempts: number;
  readonly retryInitial: string;
  readonly steps: readonly number[];
  readonly stepS: number;
  readonly openConcurrency: number;
  readonly textBytes: number;
  readonly inboxes: number;
  readonly drainMaxS: number;
  readonly warmupS: number;
  readonly sinkGreetingMs: number;
  readonly sinkDomain: string;
  readonly floorCount: number;
  readonly floorRate: number;
  readonly loadWaitS: number;
  readonly cpuProfile: boolean;
}

function settingsFromEnv(env = process.env): Settings {
  const num = (name: string, fallback: number, min: number, max: number, integer = true) => envNumber(env, name, fallback, min, max, integer);
  const list = <T>(name: string, known: readonly string[], map: (s: string) => T) => envList(env, name, known, map);
  const steps = (env["BENCH_STEPS"] || "10,20,35,50,70,100,140,200,280,400,560,800").split(",").map((s) => Number(s.trim()));
  if (steps.some((s) => !(s >= 1 && s <= 5000)) || steps.some((s, i) => i > 0 && s <= steps[i - 1]!)) {
    throw new Error("BENCH_STEPS must be increasing rates from 1 to 5000 msg/s");
  }
  const retryInitial = env["BENCH_RETRY_INITIAL"] || "2s";
  if (!/^\d+(ms|s|m)$/.test(retryInitial)) throw new Error("BENCH_RETRY_INITIAL must be a duration such as 2s or 500ms");
  const sinkDomain = (env["BENCH_SINK_DOMAIN"] || "bench-sink.test").toLowerCase();
  if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(sinkDomain)) throw new Error("BENCH_SINK_DOMAIN must be a domain name");
  const runs = num("BENCH_RUNS", 3, 1, 20);
  return {
    systems: list("BENCH_SYSTEMS", Object.keys(SYSTEMS), (s) => SYSTEMS[s]!),
    scenarios: list("BENCH_SCENARIOS", SCENARIOS, (s) => s as ScenarioName),
    runs,
    throughputRuns: num("BENCH_THROUGHPUT_RUNS", runs, 1, 20),
    acceptS: num("BENCH_ACCEPT_S", 10, 1, 600),
    acceptClients: num("BENCH_ACCEPT_CLIENTS", 16, 1, 1000),
    latencyS: num("BENCH_LATENCY_S", 30, 1, 600),
    latencyRate: num("BENCH_LATENCY_RATE", 20, 1, 5000),
    deferralS: num("BENCH_DEFERRAL_S", 30, 1, 600),
    deferralRate: num("BENCH_DEFERRAL_RATE", num("BENCH_LATENCY_RATE", 20, 1, 5000), 1, 5000),
    deferEvery: num("BENCH_DEFER_EVERY", 10, 2, 1000),
    deferAttempts: num("BENCH_DEFER_ATTEMPTS", 2, 1, 20),
    retryInitial,
    steps,
    stepS: num("BENCH_STEP_S", 15, 4, 600),
    openConcurrency: num("BENCH_OPEN_CONCURRENCY", 64, 1, 1000),
    textBytes: num("BENCH_TEXT_BYTES", 1024, 1, 5 * 1024 * 1024),
    inboxes: num("BENCH_INBOXES", 16, 1, 10_000),
    drainMaxS: num("BENCH_DRAIN_MAX_S", 120, 5, 3600),
    warmupS: num("BENCH_WARMUP_S", 5, 0, 120),
    sinkGreetingMs: num("BENCH_SINK_GREETING_MS", 0, 0, 10_000),
    sinkDomain,
    floorCount: num("BENCH_FLOOR_COUNT", 150, 10, 10_000),
    floorRate: num("BENCH_FLOOR_RATE", 15, 1, 1000),
    loadWaitS: num("BENCH_LOAD_WAIT_S", 120, 0, 3600),
    cpuProfile: env["BENCH_CPU_PROF"] === "1",
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);
const now = epochNow;

// ---------------------------------------------------------------------------------------------------------------
// Systems and runs

interface System {
  readonly name: SystemName;
  /** The client job fields that point at this system. */
  readonly target: Pick<OutboundJob, "target" | "apiUrl" | "apiKey" | "inboxIds" | "host" | "port" | "from">;
  /** Processes whose memory is reported (ours: the worker; Postfix: master and children). */
  memory(): { rssMb: number; pssMb: number };
  /** Work accepted but not handed to the sink yet that the system itself reports, if it can (Postfix's queue). */
  backlog(): Promise<number | null>;
}

interface Context {
  readonly settings: Settings;
  readonly sink: Sink;
  readonly groups: ProcessGroups;
  readonly reapers: Readonly<Record<string, () => number | undefined>>;
  readonly ours: OurOutboundStack | undefined;
  readonly runs: RunRecord[];
  /** Sink records that matched no message of the run they arrived in (late or foreign). */
  strays: number;
}

/** Matches sink records to sent messages: first arrival per message, duplicates and strays counted. */
class Arrivals {
  readonly received = new Map<string, SinkRecord>();
  duplicates = 0;
  strays = 0;
  rcptMismatches = 0;
  private readonly byMessageId = new Map<string, SendRecord>();
  private readonly byToken = new Map<string, SendRecord>();
  private pending: SinkRecord[] = [];
  lastArrivalAt = now();

  /** Sink records that came before the client's records are known wait until `expect` is called. */
  add(records: readonly SinkRecord[]): void {
    if (records.length > 0) this.lastArrivalAt = now();
    this.pending.push(...records);
    this.match();
  }

  expect(sent: readonly SendRecord[]): void {
    for (const s of sent) {
      if (s.acceptedAt === null) continue;
      if (s.messageId) this.byMessageId.set(s.messageId, s);
      this.byToken.set(s.token, s);
    }
    this.match();
  }

  private match(): void {
    if (this.byToken.size === 0) return;
    for (const r of this.pending) {
      const token = tokenInSubject(r.subject);
      const sent = this.byMessageId.get(r.messageId) ?? (token ? this.byToken.get(token) : undefined);
      if (!sent) {
        this.strays++;
        continue;
      }
      if (this.received.has(sent.token)) {
        this.duplicates++;
        continue;
      }
      if (r.rcpt.length !== 1 || r.rcpt[0] !== sent.to.toLowerCase()) this.rcptMismatches++;
      this.received.set(sent.token, r);
    }
    this.pending = [];
  }

  /** Messages the sink got that were matched by Message-ID (not only by the Subject token). */
  matchedByMessageId(): number {
    let n = 0;
    for (const r of this.received.values()) if (this.byMessageId.has(r.messageId)) n++;
    return n;
  }
}

/** Meters a run: CPU per group (the load generator: children of this process that exited), load average. */
function startRunMeter(ctx: Context) {
  const meter = startCpuMeter(ctx.groups);
  const selfReaped = reapedTicks();
  const reaped = Object.entries(ctx.reapers).map(([group, pidOf]) => {
    const pid = pidOf();
    return { group, pid, ticks: pid === undefined ? 0 : reapedTicks(pid) };
  });
  const started = performance.now();
  const loadBefore = loadAverage();
  return {
    stop(): { cpu: CpuShare; loadBefore: number[]; loadAfter: number[] } {
      const share = meter.stop();
      const seconds = (performance.now() - started) / 1000;
      const loadgen = (reapedTicks() - selfReaped) / 100 / seconds;
      const groups: Record<string, number> = { ...share.groups, loadgen };
      let reapedCores = 0;
      for (const r of reaped) {
        if (r.pid === undefined) continue;
        const cores = Math.max(0, reapedTicks(r.pid) - r.ticks) / 100 / seconds;
        groups[r.group] = (groups[r.group] ?? 0) + cores;
        reapedCores += cores;
      }
      return { cpu: { ...share, otherCores: Math.max(0, share.otherCores - loadgen - reapedCores), groups }, loadBefore, loadAfter: loadAverage() };
    },
  };
}

interface Measured {
  readonly result: OutboundResult;
  readonly arrivals: Arrivals;
  readonly accepted: readonly SendRecord[];
  /** Seconds from the end of the client run until the sink had every accepted message (or the drain gave up). */
  readonly drainS: number;
  readonly undelivered: number;
  /** CPU over the client run and the drain after it; load average before the run and at its end. */
  readonly metered: ReturnType<ReturnType<typeof startRunMeter>["stop"]>;
  /** CPU over the client run alone. */
  readonly runCpu: CpuShare;
  /** ours, when sampled: what PostgreSQL's busy backends were doing during the run, share of samples. */
  readonly pgWaits?: Readonly<Record<string, number>>;
  readonly memory: { rssPeakMb: number; pssPeakMb: number; temporalRssPeakMb: number };
  readonly submissions?: Readonly<Record<string, number>>;
}

/**
 * One measured run: the client job, the sink polled meanwhile, then the drain until every accepted message arrived.
 * `onAccepted` lets a scenario read submissions back before they are delivered (ours).
 */
async function measure(
  ctx: Context,
  system: System,
  job: OutboundJob,
  options: { onClientDone?: (accepted: readonly SendRecord[]) => Promise<void>; sampleWaits?: boolean } = {},
): Promise<Measured> {
  await ctx.sink.take(); // what an earlier run left behind (nothing, after its drain)
  const arrivals = new Arrivals();
  const memory = { rssPeakMb: 0, pssPeakMb: 0, temporalRssPeakMb: 0 };
  const sampleMemory = () => {
    const m = system.memory();
    memory.rssPeakMb = Math.max(memory.rssPeakMb, m.rssMb);
    memory.pssPeakMb = Math.max(memory.pssPeakMb, m.pssMb);
    if (system.name === "ours" && ctx.ours?.temporalPid !== undefined) {
      memory.temporalRssPeakMb = Math.max(memory.temporalRssPeakMb, statusKb(ctx.ours.temporalPid, "VmRSS") / 1024);
    }
  };
  const meter = startRunMeter(ctx);
  const whole = startRunMeter(ctx);
  const waits = options.sampleWaits && ctx.ours ? sampleWaits(ctx.ours) : undefined;
  const result = await runOutboundClient(job, async () => {
    arrivals.add((await ctx.sink.take()).records);
    sampleMemory();
  });
  const pgWaits = await waits?.stop();
  const runMetered = meter.stop();
  const accepted = result.records.filter((r) => r.acceptedAt !== null);
  arrivals.expect(result.records);
  if (options.onClientDone) await options.onClientDone(accepted);
  const drainStarted = now();
  arrivals.lastArrivalAt = Math.max(arrivals.lastArrivalAt, drainStarted);
  while (arrivals.received.size < accepted.length) {
    const t = now();
    if (t - drainStarted > ctx.settings.drainMaxS * 1000 || t - arrivals.lastArrivalAt > STALL_MS) break;
    await sleep(250);
    arrivals.add((await ctx.sink.take()).records);
    sampleMemory();
  }
  const drainS = (now() - drainStarted) / 1000;
  // CPU over the run and its drain: all the work the run's messages caused.
  const metered = { ...runMetered, cpu: whole.stop().cpu };
  const undelivered = accepted.length - arrivals.received.size;
  if (undelivered > 0) {
    const left = await system.backlog();
    log(`  ${system.name}: ${undelivered} accepted messages never reached the sink within the drain limit${left === null ? "" : ` (queue: ${left})`}`);
  }
  ctx.strays += arrivals.strays;
  return { result, arrivals, accepted, drainS, undelivered, metered, runCpu: runMetered.cpu, memory, ...(pgWaits ? { pgWaits } : {}) };
}

/** Samples pg_stat_activity every 50 ms: what the database's busy backends wait on (share of samples). */
function sampleWaits(ours: OurOutboundStack): { stop(): Promise<Record<string, number>> } {
  const counts: Record<string, number> = {};
  let total = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await ours.sampler.query<{ k: string; n: number }>(
        `select case when state = 'idle in transaction' then 'in transaction, waiting for the client'
                     when wait_event_type is null then 'running' else wait_event_type || ':' || wait_event end as k,
                count(*)::int as n
         from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid() and state not in ('idle') and backend_type = 'client backend'
         group by 1`,
      );
      for (const r of rows) {
        counts[r.k] = (counts[r.k] ?? 0) + r.n;
        total += r.n;
      }
      await sleep(50);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n / Math.max(1, total)]).sort((a, b) => (b[1] as number) - (a[1] as number)));
    },
  };
}

/** Submission statuses (and recipient statuses) of a sample of ours, read through GET /v1/submissions/{id}. */
async function readSubmissions(ctx: Context, records: readonly SendRecord[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const sample = records.filter((r) => r.submissionId).slice(0, SUBMISSION_SAMPLE);
  for (const r of sample) {
    const view = await getSubmission(ctx.ours!, r.submissionId!).catch(() => null);
    const key = view ? `${view.status}/${view.recipients.map((x) => x.status).join("+")}` : "unreadable";
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

function failuresOf(result: OutboundResult): { count: number; first: string | null } {
  const failed = result.records.filter((r) => r.acceptedAt === null);
  const kinds: Record<string, number> = {};
  for (const f of failed) {
    const key = (f.failure ?? "unknown").slice(0, 120);
    kinds[key] = (kinds[key] ?? 0) + 1;
  }
  const count = failed.length + result.notStarted;
  return { count, first: count === 0 ? null : JSON.stringify({ ...kinds, ...(result.notStarted > 0 ? { notStarted: result.notStarted } : {}) }) };
}

function job(ctx: Context, system: System, fields: Pick<OutboundJob, "mode" | "concurrency" | "durationS"> & Partial<OutboundJob>, tag: string): OutboundJob {
  return {
    deferEvery: 0,
    textBytes: ctx.settings.textBytes,
    sinkDomain: ctx.settings.sinkDomain,
    ...system.target,
    ...fields,
    tag: `${tag}${system.name === "ours" ? "o" : "p"}${Date.now().toString(36)}`,
  };
}

async function settle(): Promise<void> {
  await sleep(500);
  const waited = await waitForQuiet(QUIET_CORES, MAX_QUIET_WAIT_MS);
  if (waited > 2500) log(`  waited ${(waited / 1000).toFixed(0)} s for the machine to quieten down`);
}

/** accepted → received (ms) of the accepted messages that arrived, optionally only some of them. */
function deliveryMs(m: Measured, which: (r: SendRecord) => boolean = () => true): number[] {
  const out: number[] = [];
  for (const r of m.accepted) {
    if (!which(r)) continue;
    const got = m.arrivals.received.get(r.token);
    if (got) out.push(got.at - r.acceptedAt!);
  }
  return out;
}

/** Accepted → the sink's connect for that message, and connect → final dot (ms): where the delivery time goes. */
function splitMs(m: Measured, which: (r: SendRecord) => boolean = () => true): { toConnect: number[]; session: number[] } {
  const toConnect: number[] = [];
  const session: number[] = [];
  for (const r of m.accepted) {
    if (!which(r)) continue;
    const got = m.arrivals.received.get(r.token);
    if (!got) continue;
    toConnect.push(got.at - got.sinceConnectMs - r.acceptedAt!);
    session.push(got.sinceConnectMs);
  }
  return { toConnect, session };
}

function record(
  ctx: Context,
  scenario: string,
  system: System,
  run: number,
  m: Measured,
  figures: Record<string, number>,
  extra: Partial<RunRecord> = {},
): RunRecord {
  const f = failuresOf(m.result);
  const rec: RunRecord = {
    scenario,
    system: system.name,
    run,
    seconds: m.result.elapsedS,
    ...m.metered,
    failures: f.count + m.undelivered + m.arrivals.duplicates,
    error: [f.first, m.undelivered > 0 ? `${m.undelivered} never received` : null, m.arrivals.duplicates > 0 ? `${m.arrivals.duplicates} duplicates` : null]
      .filter((x) => x !== null)
      .join("; ") || null,
    figures: {
      sent: m.result.records.length,
      accepted: m.accepted.length,
      received: m.arrivals.received.size,
      matchedByMessageId: m.arrivals.matchedByMessageId(),
      duplicates: m.arrivals.duplicates,
      rcptMismatches: m.arrivals.rcptMismatches,
      drainS: m.drainS,
      rssPeakMb: m.memory.rssPeakMb,
      pssPeakMb: m.memory.pssPeakMb,
      ...(system.name === "ours" ? { temporalRssPeakMb: m.memory.temporalRssPeakMb } : {}),
      ...cpuMsPerMessage(m),
      ...figures,
    },
    ...(m.pgWaits ? { pgWaits: m.pgWaits } : {}),
    ...(m.submissions ? { submissions: m.submissions } : {}),
    ...extra,
  };
  ctx.runs.push(rec);
  return rec;
}

/** CPU milliseconds per accepted message, per process group, over the run and its drain (`cpuMs.<group>`). */
function cpuMsPerMessage(m: Measured): Record<string, number> {
  const seconds = m.result.elapsedS + m.drainS;
  const out: Record<string, number> = {};
  for (const [group, cores] of Object.entries(m.metered.cpu.groups)) {
    if (cores > 0) out[`cpuMs.${group}`] = (cores * seconds * 1000) / Math.max(1, m.accepted.length);
  }
  return out;
}

const fmt = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? "—" : n < 10 ? n.toFixed(2) : n.toFixed(1));

/**
 * Acceptance, closed loop. `variant`: "main" with BENCH_ACCEPT_CLIENTS clients; "one" with a single client (the
 * service time without queueing); "paused" (ours only) with the worker stopped (SIGSTOP) until the clients are
 * done, so acceptance has the cores to itself and delivery starts only afterwards.
 */
async function acceptRun(ctx: Context, system: System, run: number, variant: "main" | "one" | "paused"): Promise<void> {
  const { settings } = ctx;
  const scenario = variant === "main" ? "accept" : variant === "one" ? "accept-1" : "accept-paused";
  const clients = variant === "one" ? 1 : settings.acceptClients;
  const seconds = variant === "main" ? settings.acceptS : Math.max(3, Math.ceil(settings.acceptS / 2));
  const worker = variant === "paused" ? ctx.ours?.worker.pid : undefined;
  if (variant === "paused" && worker === undefined) return;
  const resume = () => {
    if (worker !== undefined) process.kill(worker, "SIGCONT");
  };
  let m: Measured;
  try {
    if (worker !== undefined) process.kill(worker, "SIGSTOP");
    m = await measure(ctx, system, job(ctx, system, { mode: "closed", concurrency: clients, durationS: seconds }, `${scenario.replace("-", "")}${run}`), {
      sampleWaits: system.name === "ours",
      onClientDone: async () => resume(),
    });
  } finally {
    resume();
  }
  const acceptMs = m.accepted.map((r) => r.acceptedAt! - r.startAt);
  const rec = record(ctx, scenario, system, run, m, {
    clients,
    msgPerS: m.accepted.length / m.result.elapsedS,
    p50Ms: percentile(acceptMs, 50),
    p99Ms: percentile(acceptMs, 99),
    maxMs: percentile(acceptMs, 100),
  });
  log(
    `${scenario.padEnd(13)} ${system.name.padEnd(7)} run ${run + 1}: ${clients} client${clients === 1 ? "" : "s"}, ${Math.round(rec.figures["msgPerS"]!)} msg/s accepted, ` +
      `p50 ${fmt(rec.figures["p50Ms"])} ms, p99 ${fmt(rec.figures["p99Ms"])} ms; all received ${m.drainS.toFixed(1)} s after the run, ` +
      `load ${m.metered.loadAfter[0]!.toFixed(2)}` +
      (rec.error ? `  [${rec.error}]` : ""),
  );
  await settle();
}

/**
 * Open loop, accepted → received. `scenario`: "latency" at BENCH_LATENCY_RATE; "deferral-clean" and "deferral" at
 * BENCH_DEFERRAL_RATE back to back, the second with every BENCH_DEFER_EVERY-th message deferred by the sink.
 */
async function latencyRun(ctx: Context, system: System, run: number, scenario: "latency" | "deferral-clean" | "deferral"): Promise<void> {
  const { settings } = ctx;
  const deferral = scenario === "deferral";
  const rate = scenario === "latency" ? settings.latencyRate : settings.deferralRate;
  let early: Record<string, number> | undefined;
  const m = await measure(
    ctx,
    system,
    job(
      ctx,
      system,
      {
        mode: "open",
        rate,
        concurrency: settings.openConcurrency,
        durationS: scenario === "latency" ? settings.latencyS : settings.deferralS,
        deferEvery: deferral ? settings.deferEvery : 0,
      },
      `${scenario === "latency" ? "lat" : deferral ? "def" : "dcl"}${run}`,
    ),
    system.name === "ours" && deferral
      ? {
          onClientDone: async (accepted) => {
            early = await readSubmissions(ctx, accepted.filter((r) => r.deferred));
          },
        }
      : {},
  );
  const submissions =
    system.name === "ours" ? await readSubmissions(ctx, deferral ? m.accepted.filter((r) => r.deferred) : m.accepted) : undefined;
  const all = deliveryMs(m, (r) => !r.deferred);
  const split = splitMs(m, (r) => !r.deferred);
  const deferred = deliveryMs(m, (r) => r.deferred);
  const acceptMs = m.accepted.map((r) => r.acceptedAt! - r.startAt);
  const rec = record(
    ctx,
    scenario,
    system,
    run,
    { ...m, ...(submissions ? { submissions } : {}) },
    {
      offeredPerS: rate,
      // 1 when what was left at the end of the clean run reached the sink within HOLD_DRAIN_S: the system kept up.
      ...(deferral ? {} : { keptUp: m.drainS <= HOLD_DRAIN_S ? 1 : 0 }),
      p50Ms: percentile(all, 50),
      p99Ms: percentile(all, 99),
      maxMs: percentile(all, 100),
      toConnectP50Ms: percentile(split.toConnect, 50),
      sessionP50Ms: percentile(split.session, 50),
      acceptP50Ms: percentile(acceptMs, 50),
      acceptP99Ms: percentile(acceptMs, 99),
      ...(deferral
        ? {
            deferredSent: m.accepted.filter((r) => r.deferred).length,
            deferredReceived: deferred.length,
            deferredP50Ms: percentile(deferred, 50),
            deferredMaxMs: percentile(deferred, 100),
          }
        : {}),
    },
    early ? { submissionsEarly: early } : {},
  );
  log(
    `${scenario.padEnd(14)} ${system.name.padEnd(7)} run ${run + 1}: ${rate}/s, accepted → received p50 ${fmt(rec.figures["p50Ms"])} ms, p99 ${fmt(rec.figures["p99Ms"])} ms` +
      `${deferral ? " (the 90% not deferred)" : ""}, accepted → sink connect p50 ${fmt(rec.figures["toConnectP50Ms"])} ms, ` +
      `202/250 p50 ${fmt(rec.figures["acceptP50Ms"])} ms` +
      (deferral ? `; deferred: ${deferred.length}/${rec.figures["deferredSent"]} received, p50 ${fmt(rec.figures["deferredP50Ms"])} ms` : "") +
      (submissions ? `; submissions ${JSON.stringify(submissions)}${early ? ` (right after the run: ${JSON.stringify(early)})` : ""}` : "") +
      (rec.error ? `  [${rec.error}]` : ""),
  );
  await settle();
}

async function throughputRun(ctx: Context, system: System, run: number): Promise<void> {
  const { settings } = ctx;
  const steps: StepRecord[] = [];
  let last: Measured | undefined;
  for (const rate of settings.steps) {
    const m = await measure(
      ctx,
      system,
      job(ctx, system, { mode: "open", rate, concurrency: settings.openConcurrency, durationS: settings.stepS }, `thr${run}r${rate}`),
    );
    last = m;
    const t0 = m.result.startedAt;
    const half = t0 + (settings.stepS * 1000) / 2;
    const end = t0 + settings.stepS * 1000;
    let inSecondHalf = 0;
    for (const r of m.arrivals.received.values()) if (r.at >= half && r.at < end) inSecondHalf++;
    const receivedPerS = inSecondHalf / (settings.stepS / 2);
    const acceptedPerS = m.accepted.filter((r) => r.acceptedAt! < end).length / settings.stepS;
    const delivery = deliveryMs(m);
    const acceptMs = m.accepted.map((r) => r.acceptedAt! - r.dueAt);
    const f = failuresOf(m.result);
    const reasons: string[] = [];
    if (f.count > 0) reasons.push(`${f.count} not accepted`);
    if (acceptedPerS < HOLD_SHARE * rate) reasons.push(`accepted ${acceptedPerS.toFixed(0)}/s`);
    if (receivedPerS < RECEIVED_SHARE * rate) reasons.push(`received ${receivedPerS.toFixed(0)}/s`);
    if (m.drainS > HOLD_DRAIN_S) reasons.push(`${m.drainS.toFixed(1)} s to drain`);
    if (m.undelivered > 0) reasons.push(`${m.undelivered} never received`);
    const step: StepRecord = {
      offeredPerS: rate,
      acceptedPerS,
      receivedPerS,
      acceptP99Ms: percentile(acceptMs, 99),
      deliveryP50Ms: percentile(delivery, 50),
      deliveryP99Ms: percentile(delivery, 99),
      drainS: m.drainS,
      rssPeakMb: m.memory.rssPeakMb,
      pssPeakMb: m.memory.pssPeakMb,
      temporalRssPeakMb: m.memory.temporalRssPeakMb,
      cpu: m.runCpu,
      held: reasons.length === 0,
      reason: reasons.join(", ") || null,
    };
    steps.push(step);
    log(
      `throughput ${system.name.padEnd(7)} run ${run + 1}: offered ${rate}/s → accepted ${acceptedPerS.toFixed(0)}/s, received ${receivedPerS.toFixed(0)}/s ` +
        `(second half), delivery p50 ${fmt(step.deliveryP50Ms)} ms p99 ${fmt(step.deliveryP99Ms)} ms, drained in ${m.drainS.toFixed(1)} s, ` +
        `RSS ${system.name === "ours" ? "worker" : "Postfix PSS"} ${Math.round(system.name === "ours" ? step.rssPeakMb : step.pssPeakMb)} MB` +
        `${step.held ? "" : `  — breaks: ${step.reason}`}, load ${m.metered.loadAfter[0]!.toFixed(2)}`,
    );
    await settle();
    if (!step.held) break;
  }
  const held = steps.filter((s) => s.held);
  const broke = steps.find((s) => !s.held);
  ctx.runs.push({
    scenario: "throughput",
    system: system.name,
    run,
    seconds: steps.length * settings.stepS,
    cpu: broke?.cpu ?? held[held.length - 1]?.cpu ?? { machineCores: 0, otherCores: 0, groups: {} },
    loadBefore: last?.metered.loadBefore ?? [],
    loadAfter: last?.metered.loadAfter ?? [],
    failures: 0,
    error: broke ? null : `held every step up to ${settings.steps[settings.steps.length - 1]} msg/s`,
    figures: {
      sustainedPerS: held.length > 0 ? held[held.length - 1]!.offeredPerS : 0,
      heldOfferedPerS: held.length > 0 ? held[held.length - 1]!.offeredPerS : 0,
      breaksAtPerS: broke?.offeredPerS ?? Number.NaN,
      receivedAtBreakPerS: broke?.receivedPerS ?? Number.NaN,
      acceptedAtBreakPerS: broke?.acceptedPerS ?? Number.NaN,
      maxReceivedPerS: Math.max(...steps.map((s) => s.receivedPerS)),
      rssPeakMb: Math.max(...steps.map((s) => s.rssPeakMb)),
      pssPeakMb: Math.max(...steps.map((s) => s.pssPeakMb)),
      temporalRssPeakMb: Math.max(...steps.map((s) => s.temporalRssPeakMb)),
    },
    steps,
  });
}

/** The Temporal floor (ours only): no-op workflows of the delivery's shape on the same dev server, in a child process. */
async function floorRun(ctx: Context): Promise<void> {
  const ours = ctx.ours!;
  if (ours.temporalPid === undefined) {
    log("floor: the Temporal dev server's process is unknown (external TEMPORAL_ADDRESS?); skipped");
    return;
  }
  const floorJob: FloorJob = { address: ours.infra.temporalAddress, temporalPid: ours.temporalPid, count: ctx.settings.floorCount, rate: ctx.settings.floorRate };
  const meter = startRunMeter(ctx);
  const child = spawn(process.execPath, ["--import", "tsx", resolve("bench/outbound-floor.ts"), JSON.stringify(floorJob)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  const metered = meter.stop();
  if (code !== 0 || out.trim() === "") throw new Error(`outbound-floor exited with code ${code}`);
  const shapes = JSON.parse(out.trim().split("\n").pop()!) as FloorShape[];
  const figures: Record<string, number> = { offeredPerS: ctx.settings.floorRate };
  for (const s of shapes) {
    figures[`serverMs.${s.shape}`] = s.serverCpuMs;
    figures[`workerMs.${s.shape}`] = s.workerCpuMs;
    figures[`p50Ms.${s.shape}`] = s.p50Ms;
    figures[`startP50Ms.${s.shape}`] = s.startP50Ms;
    figures[`startP99Ms.${s.shape}`] = s.startP99Ms;
    figures[`completed.${s.shape}`] = s.workflows;
  }
  ctx.runs.push({
    scenario: "floor",
    system: "ours",
    run: 0,
    seconds: shapes.reduce((a, s) => a + s.seconds, 0),
    ...metered,
    failures: shapes.filter((s) => s.workflows < ctx.settings.floorCount).length,
    error: null,
    figures,
  });
  for (const s of shapes) {
    log(
      `floor      ${s.shape.padEnd(24)} ${s.workflows} workflows at ${ctx.settings.floorRate}/s: Temporal server ${fmt(s.serverCpuMs)} ms CPU each, ` +
        `worker + client ${fmt(s.workerCpuMs)} ms, start call p50 ${fmt(s.startP50Ms)} ms p99 ${fmt(s.startP99Ms)} ms, start → result p50 ${fmt(s.p50Ms)} ms`,
    );
  }
  await settle();
}

/** A few messages end to end before anything is measured; throws when none arrives (e.g. send not implemented). */
async function warmUp(ctx: Context, system: System): Promise<void> {
  const { settings } = ctx;
  const seconds = Math.max(1, settings.warmupS);
  const m = await measure(ctx, system, job(ctx, system, { mode: "open", rate: settings.latencyRate, concurrency: 16, durationS: seconds }, "warm"));
  const f = failuresOf(m.result);
  if (m.accepted.length === 0) throw new Error(`${system.name}: no message was accepted during the warm-up: ${f.first}`);
  // Acceptance can still be measured when delivery does not work: the runs then show every message as never received.
  if (m.arrivals.received.size === 0) log(`WARNING ${system.name}: none of ${m.accepted.length} accepted messages reached the sink during the warm-up`);
  log(
    `warm-up    ${system.name.padEnd(7)}: ${m.accepted.length} accepted, ${m.arrivals.received.size} received` +
      (m.arrivals.matchedByMessageId() < m.arrivals.received.size ? ` (only ${m.arrivals.matchedByMessageId()} by Message-ID)` : "") +
      (f.first ? `, failures ${f.first}` : ""),
  );
  await settle();
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const settings = settingsFromEnv();
  const config = loadConfig();
  const run = startRun("outbound");
  const teardown = new Teardown();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => void teardown.run().finally(() => process.exit(130)));
  }
  if (settings.systems.includes("Postfix")) await ensurePostfix(log);
  const workDir = await mkdtemp(join(tmpdir(), "mailbox-outbound-"));
  await chmod(workDir, 0o755); // PostgreSQL runs as an unprivileged user when we are root
  teardown.add(() => rm(workDir, { recursive: true, force: true }));
  const profileDir = settings.cpuProfile ? resultPath("cpu-outbound", run.startedAt) : undefined;
  const runs: RunRecord[] = [];
  const rolePids = new Map<number, string>();
  let report: OutboundReport | undefined;
  try {
    const loadAtStart = await waitForQuietLoad(QUIET_LOAD, settings.loadWaitS, log);
    const sink = await startSink({ greetingDelayMs: settings.sinkGreetingMs, deferAttempts: settings.deferAttempts }, teardown);
    log(`sink on 127.0.0.1:${sink.port} (${settings.sinkDomain}), greeting after ${settings.sinkGreetingMs} ms`);
    const systems: System[] = [];
    let ours: OurOutboundStack | undefined;
    let postfix: PostfixRelay | undefined;
    if (settings.systems.includes("ours")) {
      const profile = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
      ours = await startOurOutboundStack(
        {
          workDir,
          config,
          inboxes: settings.inboxes,
          sinkDomain: settings.sinkDomain,
          sinkPort: sink.port,
          retryInitial: settings.retryInitial,
          log,
          nodeArgs: { api: profile, worker: profile },
        },
        teardown,
      );
      const stack = ours;
      for (const r of [stack.api, stack.worker, stack.smtp]) rolePids.set(r.pid, r.role);
      systems.push({
        name: "ours",
        target: { target: "api", apiUrl: stack.apiUrl, apiKey: stack.apiKey, inboxIds: stack.inboxIds },
        memory: () => ({ rssMb: statusKb(stack.worker.pid, "VmRSS") / 1024, pssMb: pssKb(stack.worker.pid) / 1024 }),
        backlog: async () => null,
      });
    }
    if (settings.systems.includes("Postfix")) {
      postfix = await startPostfixRelay(workDir, await findFreePort(), sink.port, teardown);
      const relay = postfix;
      log(`Postfix ${relay.version()} relaying on 127.0.0.1:${relay.port}`);
      systems.push({
        name: "Postfix",
        target: { target: "smtp", host: "127.0.0.1", port: relay.port, from: SENDER },
        memory: () => {
          const pids = relay.pids();
          return { rssMb: pids.reduce((a, p) => a + statusKb(p, "VmRSS"), 0) / 1024, pssMb: pids.reduce((a, p) => a + pssKb(p), 0) / 1024 };
        },
        backlog: () => relay.backlog(),
      });
    }
    // Every run meters every group, so what an idle system costs during another's run shows too.
    const groups: Record<string, () => readonly number[]> = { bench: () => [process.pid], sink: () => [sink.pid] };
    const reapers: Record<string, () => number | undefined> = {};
    if (ours) {
      const stack = ours;
      groups["api"] = () => [stack.api.pid];
      groups["worker"] = () => [stack.worker.pid];
      groups["smtp"] = () => [stack.smtp.pid];
      if (stack.infra.postmasterPid !== undefined) {
        groups["postgres"] = () => withChildren(stack.infra.postmasterPid!);
        reapers["postgres"] = () => stack.infra.postmasterPid;
      }
      if (stack.temporalPid !== undefined) groups["temporal"] = () => [stack.temporalPid!];
    }
    if (postfix) {
      const relay = postfix;
      groups["postfix"] = () => relay.pids();
      reapers["postfix"] = () => relay.masterPid();
    }
    const ctx: Context = { settings, sink, groups, reapers, ours, runs, strays: 0 };

    for (const system of systems) await warmUp(ctx, system);
    const rotate = (i: number) => systems.map((_, k) => systems[(k + i) % systems.length]!);
    for (const scenario of settings.scenarios) {
      log(`— ${scenario} —`);
      const n = scenario === "throughput" ? settings.throughputRuns : settings.runs;
      for (let i = 0; i < n; i++) {
        for (const system of rotate(i)) {
          switch (scenario) {
            case "accept":
              await acceptRun(ctx, system, i, "main");
              await acceptRun(ctx, system, i, "one");
              if (system.name === "ours") await acceptRun(ctx, system, i, "paused");
              break;
            case "latency":
              await latencyRun(ctx, system, i, "latency");
              break;
            case "deferral":
              await latencyRun(ctx, system, i, "deferral-clean");
              await latencyRun(ctx, system, i, "deferral");
              break;
            case "throughput":
              await throughputRun(ctx, system, i);
              break;
            case "floor":
              if (system.name === "ours" && i === 0) await floorRun(ctx);
              break;
          }
        }
      }
    }
    const logs = ours ? roleLogs([ours.api, ours.worker, ours.smtp]) : { lines: {}, tail: {} };
    report = {
      startedAt: run.startedAt.toISOString(),
      revision: run.revision,
      settings,
      machine: {
        ...machineFacts(),
        postfix: postfix?.version() ?? null,
      },
      loadAtStart,
      strays: ctx.strays,
      roleLogLines: logs.lines,
      roleLogTail: logs.tail,
      runs,
    };
  } finally {
    await teardown.run();
  }
  if (!report) return;
  console.log(formatOutboundReport(report));
  const file = await run.write(report);
  console.log(`figures written to ${file}`);
  if (profileDir) {
    // Each role's threads wrote a profile when it stopped (thread 0 is the main thread).
    const files = (await readdir(profileDir)).filter((f) => f.endsWith(".cpuprofile")).sort();
    for (const name of files) {
      const ids = profileIds(name);
      const role = ids ? (rolePids.get(ids.pid) ?? `pid ${ids.pid}`) : "?";
      const label = `${role}, ${ids?.thread ? `thread ${ids.thread} (workflows)` : "main thread"}`;
      console.log(`\n${await summarizeCpuProfile(join(profileDir, name), { label, work: ROLE_WORK })}`);
    }
  }
}

await main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exit(1);
  },
);
