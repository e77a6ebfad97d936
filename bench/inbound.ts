// `npm run bench:inbound`: inbound SMTP on the embedded stack (one webhook endpoint at a local HTTPS receiver)
// beside Postfix (Debian) and Haraka (npm) on this machine, 10 KB messages, loopback only, every loop bounded.
//
//   idle         RSS per 1,000 idle sessions (EHLO, then nothing) of the SMTP server process(es), first, on fresh
//                processes
//   throughput   smtp-source (Postfix's load generator), 100 sessions reusing their connections (-d): msg/s with
//                250 only after the message is durable; the first run lasts BENCH_SUSTAINED_S (60 s), the others
//                BENCH_THROUGHPUT_S
//   newconn      the same with a new connection per message; connect→banner is measured apart
//   inflow       ours only: the smtp role started again with the in-flow delay on (INBOUND_INFLOW_DELAY=on, every
//                other scenario runs it off, so their rows measure what acceptance alone keeps up), then BENCH_RUNS
//                BENCH_SUSTAINED_S runs of smtp-source as above: msg/s accepted and stored, the backlog at the end
//   latency      our own client (bench/inbound-client.ts), open loop at BENCH_LATENCY_RATE (half the 1,000 msg/s
//                target): `.`→250 p50/p99; ours also 250→stored p50/p99 (each message's created_at beside its 250)
//   webhook      ours only: open loop at 100 msg/s with a token in each Message-ID; arrival (final dot written) →
//                webhook received, with a receiver answering 2xx, then with one answering 503 to 10% (nothing lost?)
//   commits      ours only: pg_stat_database.xact_commit (and transaction ids used) per accepted message, over a
//                fixed batch, minus what the idle stack commits over as long; with and without a webhook endpoint
//
// Between runs each system drains what it accepted (ours: raw messages and webhook deliveries; Postfix: its queue),
// at most BENCH_DRAIN_MAX_S; what ours has left then is marked failed ("set aside") so the next run starts clean.
// Runs alternate which system goes first. A default run takes 15–20 minutes, most of it ours draining.
//
// Settings (env): BENCH_SYSTEMS=ours,postfix,haraka  BENCH_SCENARIOS=idle,throughput,newconn,latency,webhook,commits,inflow
//   BENCH_RUNS=3  BENCH_SUSTAINED_S=60  BENCH_THROUGHPUT_S=5  BENCH_NEWCONN_S=5  BENCH_LATENCY_S=5
//   BENCH_LATENCY_RATE=500  BENCH_WEBHOOK_S=15  BENCH_WEBHOOK_RATE=100  BENCH_WEBHOOK_FAIL=0.1  BENCH_SESSIONS=100
//   BENCH_MESSAGE_BYTES=10240  BENCH_IDLE_SESSIONS=1000  BENCH_COMMIT_BATCH=1000  BENCH_WARMUP_S=5  BENCH_INBOXES=100
//   BENCH_DRAIN_MAX_S=120  BENCH_LOAD_WAIT_S=120  BENCH_WEBHOOK_RETRY_INITIAL_MS=1000  BENCH_CPU_PROF=1 (profile the
//   smtp role, summary printed)  LOG_LEVEL (of our roles; error)  INBOUND_CONCURRENCY etc. reach our roles as set
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { loadConfig, type Config } from "../src/config.js";
import { findFreePort } from "../src/runtime/free-port.js";
import { loadAverage, machineFacts, resultPath, startRun, waitForQuietLoad } from "./machine.js";
import { summarizeCpuProfile } from "./cpu-profile.js";
import { startCpuMeter, waitForQuiet, withChildren, type CpuShare, type ProcessGroups } from "./cpu.js";
import { runInboundClient, type ClientJob, type ClientResult } from "./inbound-client.js";
import { staticMessage, tokenOf } from "./inbound-message.js";
import { roleLogs, startOurStack, type OurStack, type PgCounters } from "./inbound-ours.js";
import { HARAKA_VERSION, startHaraka, startPostfix, type PeerServer } from "./inbound-peers.js";
import { ensurePostfix } from "./postfix.js";
import { formatReport, type Report, type RunRecord, type SystemName } from "./inbound-report.js";
import { processTicks, pssKb, reapedTicks, statusKb } from "./processes.js";
import { percentile } from "./run-report.js";
import { envList, envNumber } from "./settings.js";
import { Teardown } from "./stack.js";

const SCENARIOS = ["idle", "throughput", "newconn", "latency", "webhook", "commits", "inflow"] as const;
type ScenarioName = (typeof SCENARIOS)[number];
const SYSTEMS: Readonly<Record<string, SystemName>> = { ours: "ours", postfix: "Postfix", haraka: "Haraka" };
const SENDER = "bench-sender@load.localhost";
/** Before a run, up to this long for a second with at most QUIET_CORES busy. */
const QUIET_CORES = 0.3;
const MAX_QUIET_WAIT_MS = 5_000;
/** Load average under which the machine counts as quiet enough to start. */
const QUIET_LOAD = 1.5;
/** PostgreSQL backends flush their statistics within this long of going idle (PGSTAT_IDLE_INTERVAL is 10 s). */
const PG_STATS_SETTLE_MS = 11_500;
/** Seconds a memory reading may wait for RSS to settle. */
const STABLE_MEMORY_TRIES = 20;

export interface Settings {
  readonly systems: readonly SystemName[];
  readonly scenarios: readonly ScenarioName[];
  readonly runs: number;
  readonly sustainedS: number;
  readonly throughputS: number;
  readonly newconnS: number;
  readonly latencyS: number;
  readonly latencyRate: number;
  readonly webhookS: number;
  readonly webhookRate: number;
  readonly webhookFail: number;
  readonly sessions: number;
  readonly messageBytes: number;
  readonly idleSessions: number;
  readonly commitBatch: number;
  readonly warmupS: number;
  readonly drainMaxS: number;
  readonly loadWaitS: number;
  readonly webhookRetryInitialMs: number;
  readonly inboxes: number;
  readonly cpuProfile: boolean;
}

function settingsFromEnv(env = process.env): Settings {
  const num = (name: string, fallback: number, min: number, max: number, integer = true) => envNumber(env, name, fallback, min, max, integer);
  const list = <T>(name: string, known: readonly string[], map: (s: string) => T) => envList(env, name, known, map);
  return {
    systems: list("BENCH_SYSTEMS", Object.keys(SYSTEMS), (s) => SYSTEMS[s]!),
    scenarios: list("BENCH_SCENARIOS", SCENARIOS, (s) => s as ScenarioName),
    runs: num("BENCH_RUNS", 3, 1, 20),
    sustainedS: num("BENCH_SUSTAINED_S", 60, 1, 600),
    throughputS: num("BENCH_THROUGHPUT_S", 5, 1, 600),
    newconnS: num("BENCH_NEWCONN_S", 5, 1, 600),
    latencyS: num("BENCH_LATENCY_S", 5, 1, 600),
    latencyRate: num("BENCH_LATENCY_RATE", 500, 1, 20_000),
    webhookS: num("BENCH_WEBHOOK_S", 15, 1, 600),
    webhookRate: num("BENCH_WEBHOOK_RATE", 100, 1, 5000),
    webhookFail: num("BENCH_WEBHOOK_FAIL", 0.1, 0, 0.9, false),
    sessions: num("BENCH_SESSIONS", 100, 1, 1000),
    messageBytes: num("BENCH_MESSAGE_BYTES", 10_240, 512, 10 * 1024 * 1024),
    idleSessions: num("BENCH_IDLE_SESSIONS", 1000, 1, 10_000),
    commitBatch: num("BENCH_COMMIT_BATCH", 1000, 10, 100_000),
    warmupS: num("BENCH_WARMUP_S", 5, 0, 120),
    drainMaxS: num("BENCH_DRAIN_MAX_S", 120, 1, 3600),
    loadWaitS: num("BENCH_LOAD_WAIT_S", 120, 0, 3600),
    webhookRetryInitialMs: num("BENCH_WEBHOOK_RETRY_INITIAL_MS", 1000, 10, 3_600_000),
    inboxes: num("BENCH_INBOXES", 100, 1, 10_000),
    cpuProfile: env["BENCH_CPU_PROF"] === "1",
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** One system under test, as the scenarios see it. */
interface System {
  readonly name: SystemName;
  readonly port: number;
  /** Recipients for our client (the same addresses for every system). */
  readonly recipients: readonly string[];
  /** The SMTP server's processes (memory). */
  pids(): number[];
  /** Accepted work not finished yet (ours: raw messages and webhook deliveries; Postfix: queue files). */
  backlog(): Promise<number>;
  /** Marks what is still unfinished after the drain limit as set aside, so the next run starts from nothing. */
  setAside?(): Promise<number>;
}

interface Context {
  readonly settings: Settings;
  readonly config: Config;
  readonly workDir: string;
  readonly messageFile: string;
  readonly groups: ProcessGroups;
  /** Per group, the process that reaps the group's short-lived processes (Postfix's master, the postmaster). */
  readonly reapers: Readonly<Record<string, () => number | undefined>>;
  readonly ours: OurStack | undefined;
  readonly runs: RunRecord[];
}

/** Steal ticks of the whole machine (/proc/stat): time the hypervisor gave our virtual CPUs to someone else. */
function stealTicks(): number {
  const fields = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/);
  return Number(fields[8] ?? 0);
}

/**
 * Meters a run: CPU per group (load generators: children that exited meanwhile), steal, load average, wall time.
 * cpu.ts counts steal as busy; here it is taken out of "other" and reported as a group of its own.
 */
function startRunMeter(ctx: Context) {
  const meter = startCpuMeter(ctx.groups);
  const childTicks = reapedTicks();
  // A reaper's cutime grows by a child's whole lifetime when the child exits: what a child that was already running
  // had used before the run is taken off again (its ticks at the start are kept per child).
  const reaped = Object.entries(ctx.reapers).map(([group, pidOf]) => {
    const pid = pidOf();
    const children = new Map<number, number>();
    if (pid !== undefined) for (const child of withChildren(pid).slice(1)) children.set(child, processTicks(child) ?? 0);
    return { group, pid, ticks: pid === undefined ? 0 : reapedTicks(pid), children };
  });
  const steal = stealTicks();
  const started = performance.now();
  const loadBefore = loadAverage();
  return {
    stop(): { cpu: CpuShare; loadBefore: [number, number, number]; loadAfter: [number, number, number] } {
      const share = meter.stop();
      const seconds = (performance.now() - started) / 1000;
      const loadgen = (reapedTicks() - childTicks) / 100 / seconds;
      const stolen = (stealTicks() - steal) / 100 / seconds;
      // Processes of a group that exited during the run: their CPU went to their reaper's cutime.
      const groups = { ...share.groups };
      let reapedCores = 0;
      for (const r of reaped) {
        if (r.pid === undefined) continue;
        let ticks = reapedTicks(r.pid) - r.ticks;
        for (const [child, before] of r.children) if (processTicks(child) === undefined) ticks -= before;
        const cores = Math.max(0, ticks) / 100 / seconds;
        groups[r.group] = (groups[r.group] ?? 0) + cores;
        reapedCores += cores;
      }
      return {
        cpu: { ...share, otherCores: Math.max(0, share.otherCores - loadgen - stolen - reapedCores), groups: { ...groups, loadgen, steal: stolen } },
        loadBefore,
        loadAfter: loadAverage(),
      };
    },
  };
}

/** Waits until the system has no accepted work left (bounded); returns how long it took and what was left. */
async function drain(system: System, maxS: number): Promise<{ seconds: number; left: number }> {
  const started = performance.now();
  for (;;) {
    const left = await system.backlog();
    const seconds = (performance.now() - started) / 1000;
    if (left === 0 || seconds >= maxS) return { seconds, left };
    await sleep(500);
  }
}

async function settle(ctx: Context, system: System): Promise<{ drainS: number; backlogLeft: number }> {
  const drained = await drain(system, ctx.settings.drainMaxS);
  if (drained.left > 0) {
    const setAside = (await system.setAside?.()) ?? 0;
    log(
      `  ${system.name}: ${drained.left} accepted messages or deliveries still unfinished after ${ctx.settings.drainMaxS} s` +
        (setAside > 0 ? `; ${setAside} set aside (marked failed) so the next run starts clean` : ""),
    );
  }
  await sleep(1000);
  const waited = await waitForQuiet(QUIET_CORES, MAX_QUIET_WAIT_MS);
  if (waited > 2500) log(`  waited ${(waited / 1000).toFixed(0)} s for the machine to quieten down`);
  return { drainS: drained.seconds, backlogLeft: drained.left };
}

// ---------------------------------------------------------------------------------------------------------------
// Load generators

interface SourceResult {
  readonly accepted: number;
  readonly elapsedS: number;
  readonly perSecond: number[];
  readonly error: string | null;
}

/** smtp-source for `seconds` (it stops by count too), the running count of 250s sampled every second. */
async function runSmtpSource(ctx: Context, system: System, seconds: number, reuse: boolean): Promise<SourceResult> {
  const { settings } = ctx;
  const maxMessages = Math.ceil(seconds * 10_000);
  const args = [
    "-c",
    "-s", String(settings.sessions),
    "-m", String(maxMessages),
    ...(reuse ? ["-d"] : []),
    "-F", ctx.messageFile,
    "-f", SENDER,
    "-t", system.recipients[0]!,
    "-M", "bench-client.localhost",
    `127.0.0.1:${system.port}`,
  ];
  const child = spawn("smtp-source", args, { stdio: ["ignore", "pipe", "pipe"] });
  let count = 0;
  let stderr = "";
  child.stdout.setEncoding("latin1");
  child.stdout.on("data", (chunk: string) => {
    const numbers = chunk.split("\r").filter((s) => /^\d+$/.test(s));
    if (numbers.length > 0) count = Number(numbers[numbers.length - 1]);
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const started = performance.now();
  const perSecond: number[] = [];
  let last = 0;
  let done = false;
  void exited.then(() => (done = true));
  for (let s = 1; s <= seconds && !done; s++) {
    await Promise.race([sleep(started + s * 1000 - performance.now()), exited]);
    if (done) break;
    perSecond.push(count - last);
    last = count;
  }
  const elapsedS = (performance.now() - started) / 1000;
  const accepted = count;
  const killed = !done;
  if (killed) child.kill("SIGTERM");
  const code = await exited;
  const error = !killed && code !== 0 ? `smtp-source exited with ${code}: ${stderr.trim().split("\n").slice(-2).join(" ")}` : null;
  return { accepted, elapsedS: killed ? seconds : elapsedS, perSecond, error };
}

/** Lowest mean over any `window` consecutive seconds. */
function lowestWindow(perSecond: readonly number[], window: number): number {
  if (perSecond.length < window) return perSecond.length === 0 ? 0 : perSecond.reduce((a, b) => a + b, 0) / perSecond.length;
  let lowest = Number.POSITIVE_INFINITY;
  for (let i = 0; i + window <= perSecond.length; i++) {
    lowest = Math.min(lowest, perSecond.slice(i, i + window).reduce((a, b) => a + b, 0) / window);
  }
  return lowest;
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios

/** smtp-source's load: reusing connections (throughput, inflow: its first run or every run sustained) or not (newconn). */
async function throughputRun(ctx: Context, system: System, run: number, scenario: "throughput" | "newconn" | "inflow"): Promise<void> {
  const reuse = scenario !== "newconn";
  const sustained = scenario === "inflow" || (scenario === "throughput" && run === 0);
  const seconds = reuse ? (sustained ? ctx.settings.sustainedS : ctx.settings.throughputS) : ctx.settings.newconnS;
  let greeting: ClientResult | undefined;
  if (!reuse) greeting = await runInboundClient({ ...clientBase(ctx, system), mode: "greet", sessions: 1, count: 30 });
  const storedBefore = system.name === "ours" ? await ctx.ours!.stats.storedMessages() : 0;
  const writesBefore = system.name === "ours" && sustained ? await ctx.ours!.stats.writes() : null;
  const meter = startRunMeter(ctx);
  const result = await runSmtpSource(ctx, system, seconds, reuse);
  const metered = meter.stop();
  const backlogAtEnd = await system.backlog();
  const storedDuring = system.name === "ours" ? (await ctx.ours!.stats.storedMessages()) - storedBefore : null;
  const writesAfter = writesBefore ? await ctx.ours!.stats.writes() : null;
  // What PostgreSQL wrote per stored message during a sustained run (docs/deploy.md#postgresql says why it matters).
  const writes: Readonly<Record<string, number>> =
    writesBefore && writesAfter && storedDuring
      ? {
          walKbPerMessage: (writesAfter.walBytes - writesBefore.walBytes) / 1024 / storedDuring,
          fullPageImagesPerMessage: (writesAfter.walFullPageImages - writesBefore.walFullPageImages) / storedDuring,
          backendWritesPerMessage: (writesAfter.backendWrites - writesBefore.backendWrites) / storedDuring,
          checkpoints: writesAfter.checkpoints - writesBefore.checkpoints,
          rawTableMbAtEnd: writesAfter.rawTableBytes / 2 ** 20,
        }
      : {};
  // Accepted messages not stored yet, and how long storing them takes at the rate of the run.
  const rawAtEnd = system.name === "ours" ? (await ctx.ours!.stats.backlog()).raw : null;
  const { drainS, backlogLeft } = await settle(ctx, system);
  const rate = result.accepted / result.elapsedS;
  const record: RunRecord = {
    scenario,
    system: system.name,
    run,
    seconds: result.elapsedS,
    ...metered,
    failures: result.error ? 1 : 0,
    error: result.error,
    figures: {
      msgPerS: rate,
      accepted: result.accepted,
      lowest5sMsgPerS: lowestWindow(result.perSecond, 5),
      lowest10sMsgPerS: lowestWindow(result.perSecond, 10),
      backlogAtEnd,
      drainS,
      backlogLeft,
      ...(storedDuring === null ? {} : { processedPerS: storedDuring / result.elapsedS }),
      ...(rawAtEnd === null || storedDuring === null
        ? {}
        : { backlogMessagesAtEnd: rawAtEnd, ...finite("backlogSecondsAtEnd", rawAtEnd / (storedDuring / result.elapsedS)) }),
      ...(greeting ? { greetingP50Ms: percentile(greeting.bannerMs!, 50), greetingP99Ms: percentile(greeting.bannerMs!, 99) } : {}),
      ...writes,
    },
    perSecond: result.perSecond,
  };
  ctx.runs.push(record);
  log(
    `${scenario.padEnd(10)} ${system.name.padEnd(7)} run ${run + 1}: ${Math.round(rate)} msg/s over ${result.elapsedS.toFixed(0)} s` +
      (greeting ? `, banner p50 ${percentile(greeting.bannerMs!, 50).toFixed(1)} ms` : "") +
      (storedDuring === null ? "" : `, processed ${Math.round(storedDuring / result.elapsedS)}/s, backlog ${backlogAtEnd} (${rawAtEnd} messages; drained in ${drainS.toFixed(0)} s)`) +
      (writes["walKbPerMessage"] === undefined
        ? ""
        : `; PostgreSQL per message: WAL ${writes["walKbPerMessage"].toFixed(1)} KB (${writes["fullPageImagesPerMessage"]!.toFixed(2)} full pages), ` +
          `${writes["backendWritesPerMessage"]!.toFixed(2)} buffers written by backends; ${writes["checkpoints"]} checkpoints; raw table ${writes["rawTableMbAtEnd"]!.toFixed(0)} MB`) +
      `, load ${metered.loadAfter[0].toFixed(2)}, other ${metered.cpu.otherCores.toFixed(2)} cores` +
      (result.error ? `, ERROR ${result.error}` : ""),
  );
}

/** Starts our smtp role again with the in-flow delay on or off, and warms the new process up. */
async function inFlowDelay(ctx: Context, system: System, state: "on" | "off"): Promise<void> {
  log(`ours: the smtp role again, INBOUND_INFLOW_DELAY=${state} …`);
  await ctx.ours!.restartSmtp({ INBOUND_INFLOW_DELAY: state });
  if (ctx.settings.warmupS === 0) return;
  await runSmtpSource(ctx, system, ctx.settings.warmupS, true);
  await settle(ctx, system);
}

function clientBase(ctx: Context, system: System): Omit<ClientJob, "mode"> {
  return {
    host: "127.0.0.1",
    port: system.port,
    sessions: ctx.settings.sessions,
    from: SENDER,
    recipients: system.recipients,
    messageBytes: ctx.settings.messageBytes,
  };
}

async function latencyRun(ctx: Context, system: System, run: number): Promise<void> {
  const { settings } = ctx;
  const ours = system.name === "ours" ? ctx.ours! : undefined;
  const startedAt = new Date();
  const meter = startRunMeter(ctx);
  // Ours: every message carries a token, so that its 250 can be set beside the moment it was stored.
  const tokens = ours ? { tokenPrefix: `lat${run}x${Date.now().toString(36)}`, records: true } : {};
  const result = await runInboundClient({ ...clientBase(ctx, system), mode: "open", rate: settings.latencyRate, durationS: settings.latencyS, ...tokens });
  const metered = meter.stop();
  // Before the drain's limit sets aside what is left: a message never stored counts as slower than any stored one.
  const stored = ours ? await storedAfterOk(ours, result, startedAt, settings.drainMaxS) : undefined;
  const { drainS } = await settle(ctx, system);
  const record: RunRecord = {
    scenario: "latency",
    system: system.name,
    run,
    seconds: result.elapsedS,
    ...metered,
    failures: result.failed,
    error: result.failed > 0 ? JSON.stringify(result.failures) : null,
    figures: {
      offeredPerS: settings.latencyRate,
      msgPerS: result.accepted / result.elapsedS,
      p50Ms: percentile(result.dotToOkMs, 50),
      p99Ms: percentile(result.dotToOkMs, 99),
      maxMs: percentile(result.dotToOkMs, 100),
      dueP99Ms: percentile(result.dueToOkMs, 99),
      waitedForSession: result.waitedForSession,
      drainS,
      // A percentile that falls on a message never stored is left out (JSON has no Infinity): the page shows "—".
      ...(stored ? { ...finite("storedP50Ms", percentile(stored.ms, 50)), ...finite("storedP99Ms", percentile(stored.ms, 99)), notStored: stored.notStored } : {}),
    },
  };
  ctx.runs.push(record);
  log(
    `latency    ${system.name.padEnd(7)} run ${run + 1}: ${Math.round(result.accepted / result.elapsedS)} msg/s, ` +
      `.→250 p50 ${record.figures["p50Ms"]!.toFixed(2)} ms, p99 ${record.figures["p99Ms"]!.toFixed(2)} ms` +
      (stored ? `, 250→stored p50 ${percentile(stored.ms, 50).toFixed(0)} ms, p99 ${percentile(stored.ms, 99).toFixed(0)} ms (${stored.notStored} not stored)` : "") +
      `${result.failed > 0 ? `, ${result.failed} FAILED ${JSON.stringify(result.failures)}` : ""}, load ${metered.loadAfter[0].toFixed(2)}`,
  );
}

function finite(name: string, value: number): Record<string, number> {
  return Number.isFinite(value) ? { [name]: value } : {};
}

/**
 * 250 → stored of each message the run had answered 250, once all are stored or `maxS` has passed; a message not
 * stored by then counts as Infinity (the p99 then says so).
 */
async function storedAfterOk(ours: OurStack, result: ClientResult, since: Date, maxS: number): Promise<{ ms: number[]; notStored: number }> {
  const okAt = new Map(result.records!.filter((r) => r.okAt !== null).map((r) => [r.token, r.okAt!]));
  const waitUntil = performance.now() + maxS * 1000;
  let storedAt = new Map<string, number>();
  for (;;) {
    storedAt = new Map([...(await ours.stats.storedAt(since))].map(([messageId, at]) => [tokenOf(messageId) ?? "", at]));
    if ([...okAt.keys()].every((t) => storedAt.has(t)) || performance.now() > waitUntil) break;
    await sleep(1000);
  }
  const ms = [...okAt].map(([token, ok]) => (storedAt.has(token) ? storedAt.get(token)! - ok : Number.POSITIVE_INFINITY));
  return { ms, notStored: ms.filter((m) => m === Number.POSITIVE_INFINITY).length };
}

/** Arrival → webhook at the receiver, ours only; `failRatio` of the receiver's answers are 503. */
async function webhookRun(ctx: Context, system: System, failRatio: number): Promise<void> {
  const { settings } = ctx;
  const ours = ctx.ours!;
  await ours.receiver.take(); // forget what earlier scenarios caused
  ours.receiver.setFailRatio(failRatio);
  const prefix = `wh${Math.round(failRatio * 100)}x${Date.now().toString(36)}`;
  const meter = startRunMeter(ctx);
  const result = await runInboundClient({
    ...clientBase(ctx, system),
    mode: "open",
    rate: settings.webhookRate,
    durationS: settings.webhookS,
    tokenPrefix: prefix,
    records: true,
  });
  const metered = meter.stop();
  // Wait (bounded) until every accepted message's webhook was answered 2xx, retries included.
  const sentAt = new Map(result.records!.map((r) => [r.token, r.dotAt]));
  const firstAt = new Map<string, number>();
  const okAt = new Map<string, number>();
  let requests = 0;
  let answered5xx = 0;
  const waitStarted = performance.now();
  while (performance.now() - waitStarted < settings.drainMaxS * 1000) {
    await sleep(1000);
    const taken = await ours.receiver.take();
    requests += taken.requests;
    answered5xx += taken.answered5xx;
    const tokens = await ours.stats.internetMessageIds(Object.keys(taken.records));
    for (const [messageId, rec] of Object.entries(taken.records)) {
      const token = tokenOf(tokens.get(messageId) ?? "");
      if (!token || !sentAt.has(token)) continue;
      if (!firstAt.has(token)) firstAt.set(token, rec.firstAt);
      if (rec.okAt !== null && !okAt.has(token)) okAt.set(token, rec.okAt);
    }
    if (okAt.size >= sentAt.size && (await system.backlog()) === 0) break;
  }
  ours.receiver.setFailRatio(0);
  const waitedS = (performance.now() - waitStarted) / 1000;
  const firstMs = [...firstAt].map(([t, at]) => at - sentAt.get(t)!);
  const okMs = [...okAt].map(([t, at]) => at - sentAt.get(t)!);
  const lost = sentAt.size - okAt.size;
  await settle(ctx, system);
  const record: RunRecord = {
    scenario: failRatio > 0 ? "webhook-5xx" : "webhook",
    system: system.name,
    run: 0,
    seconds: result.elapsedS,
    ...metered,
    failures: result.failed + lost,
    error: result.failed > 0 ? JSON.stringify(result.failures) : lost > 0 ? `${lost} messages without a 2xx webhook after ${waitedS.toFixed(0)} s` : null,
    figures: {
      failRatio,
      offeredPerS: settings.webhookRate,
      accepted: result.accepted,
      firstP50Ms: percentile(firstMs, 50),
      firstP99Ms: percentile(firstMs, 99),
      okP50Ms: percentile(okMs, 50),
      okP99Ms: percentile(okMs, 99),
      okMaxMs: percentile(okMs, 100),
      lost,
      requests,
      answered5xx,
      waitedS,
      dotP50Ms: percentile(result.dotToOkMs, 50),
      dotP99Ms: percentile(result.dotToOkMs, 99),
    },
  };
  ctx.runs.push(record);
  log(
    `webhook    ours    ${failRatio > 0 ? `${failRatio * 100}% 5xx` : "all 2xx"}: ${result.accepted} accepted, ` +
      `first request p50 ${record.figures["firstP50Ms"]!.toFixed(1)} ms p99 ${record.figures["firstP99Ms"]!.toFixed(1)} ms, ` +
      `2xx p50 ${record.figures["okP50Ms"]!.toFixed(1)} ms p99 ${record.figures["okP99Ms"]!.toFixed(1)} ms, lost ${lost}, ` +
      `${requests} requests (${answered5xx} answered 503)`,
  );
}

/** Commits per accepted message over a fixed batch, minus the idle stack's commits over as long. */
async function commitsRun(ctx: Context, system: System, withWebhook: boolean): Promise<void> {
  const ours = ctx.ours!;
  const recipients = withWebhook ? ours.withWebhook : ours.withoutWebhook;
  await settle(ctx, system);
  await sleep(PG_STATS_SETTLE_MS);
  const before = await ours.stats.counters();
  const meter = startRunMeter(ctx);
  const result = await runInboundClient({
    ...clientBase(ctx, system),
    recipients,
    sessions: 20,
    mode: "open",
    rate: 200,
    count: ctx.settings.commitBatch,
    durationS: Math.ceil(ctx.settings.commitBatch / 200) + 5,
  });
  const drained = await drain(system, ctx.settings.drainMaxS);
  const metered = meter.stop();
  const meteredS = result.elapsedS + drained.seconds;
  await sleep(PG_STATS_SETTLE_MS);
  const after = await ours.stats.counters();
  // The idle stack over as long (sweeper, reconcilers, this bench's own queries).
  const idleMs = after.at - before.at;
  const idleBefore = after;
  await sleep(idleMs);
  const idleAfter = await ours.stats.counters();
  const delta = (a: PgCounters, b: PgCounters, key: "xactCommit" | "nextXid" | "walFsyncs") => (b[key] ?? 0) - (a[key] ?? 0);
  const per = (key: "xactCommit" | "nextXid" | "walFsyncs") =>
    (delta(before, after, key) - delta(idleBefore, idleAfter, key)) / Math.max(1, result.accepted);
  const record: RunRecord = {
    scenario: withWebhook ? "commits" : "commits-nowebhook",
    system: "ours",
    run: 0,
    seconds: result.elapsedS,
    ...metered,
    failures: result.failed,
    error: result.failed > 0 ? JSON.stringify(result.failures) : null,
    figures: {
      accepted: result.accepted,
      commitsPerMessage: per("xactCommit"),
      writeTransactionsPerMessage: per("nextXid"),
      ...(before.walFsyncs === null ? {} : { walFsyncsPerMessage: per("walFsyncs") }),
      rollbacks: after.xactRollback - before.xactRollback,
      batchCommits: delta(before, after, "xactCommit"),
      // CPU per message from the first message to the last webhook delivered (accept, store, deliver).
      smtpCpuMsPerMessage: ((metered.cpu.groups["smtp"] ?? 0) * meteredS * 1000) / Math.max(1, result.accepted),
      postgresCpuMsPerMessage: ((metered.cpu.groups["postgres"] ?? 0) * meteredS * 1000) / Math.max(1, result.accepted),
      drainS: drained.seconds,
      idleCommits: delta(idleBefore, idleAfter, "xactCommit"),
      intervalS: idleMs / 1000,
    },
  };
  ctx.runs.push(record);
  log(
    `commits    ours    ${withWebhook ? "with webhook" : "no webhook  "}: ${record.figures["commitsPerMessage"]!.toFixed(2)} commits/message ` +
      `(${record.figures["writeTransactionsPerMessage"]!.toFixed(2)} writing), ${result.accepted} messages, ` +
      `smtp process ${record.figures["smtpCpuMsPerMessage"]!.toFixed(1)} ms CPU/message, PostgreSQL ${record.figures["postgresCpuMsPerMessage"]!.toFixed(1)} ms, ` +
      `background ${record.figures["idleCommits"]} commits over ${(idleMs / 1000).toFixed(0)} s`,
  );
}

async function idleRun(ctx: Context, system: System, run: number): Promise<void> {
  const n = ctx.settings.idleSessions;
  const memory = () => {
    const pids = system.pids();
    return { rssKb: pids.reduce((a, p) => a + statusKb(p), 0), pssKb: pids.reduce((a, p) => a + pssKb(p), 0), processes: pids.length };
  };
  // RSS moves with garbage collection: each reading waits (bounded) until two readings a second apart agree.
  const stable = async () => {
    let last = memory();
    for (let i = 0; i < STABLE_MEMORY_TRIES; i++) {
      await sleep(1000);
      const now = memory();
      if (Math.abs(now.rssKb - last.rssKb) < 1024 && Math.abs(now.pssKb - last.pssKb) < 1024) return now;
      last = now;
    }
    return last;
  };
  const before = await stable();
  let after = before;
  let opened = 0;
  const meter = startRunMeter(ctx);
  await runInboundClient({ ...clientBase(ctx, system), mode: "idle", sessions: n, holdS: 120 }, {
    whileReady: async (connections) => {
      opened = connections;
      after = await stable();
    },
  });
  const metered = meter.stop();
  await settle(ctx, system);
  const perThousand = (kb: number) => (kb / 1024 / Math.max(1, opened)) * 1000;
  const record: RunRecord = {
    scenario: "idle",
    system: system.name,
    run,
    seconds: 0,
    ...metered,
    failures: opened < n ? 1 : 0,
    error: opened < n ? `only ${opened} of ${n} sessions opened` : null,
    figures: {
      sessions: opened,
      rssMbPer1000: perThousand(after.rssKb - before.rssKb),
      pssMbPer1000: perThousand(after.pssKb - before.pssKb),
      rssBeforeMb: before.rssKb / 1024,
      rssAfterMb: after.rssKb / 1024,
      processesBefore: before.processes,
      processesAfter: after.processes,
    },
  };
  ctx.runs.push(record);
  log(
    `idle       ${system.name.padEnd(7)} run ${run + 1}: ${opened} sessions: RSS +${record.figures["rssMbPer1000"]!.toFixed(1)} MB per 1,000 ` +
      `(PSS +${record.figures["pssMbPer1000"]!.toFixed(1)} MB), ${before.processes} → ${after.processes} processes`,
  );
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const settings = settingsFromEnv();
  const config = loadConfig();
  const run = startRun("inbound");
  const teardown = new Teardown();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => void teardown.run().finally(() => process.exit(130)));
  }
  // smtp-source is the load generator of the throughput scenarios, whichever systems run.
  if (settings.systems.includes("Postfix") || settings.scenarios.some((s) => s === "throughput" || s === "newconn")) await ensurePostfix(log);

  const workDir = await mkdtemp(join(tmpdir(), "mailbox-inbound-"));
  await chmod(workDir, 0o755); // PostgreSQL runs as an unprivileged user when we are root
  teardown.add(() => rm(workDir, { recursive: true, force: true }));
  const runs: RunRecord[] = [];
  let report: Report | undefined;
  const profileDir = settings.cpuProfile ? resultPath("cpu-inbound", run.startedAt) : undefined;
  try {
    const loadAtStart = await waitForQuietLoad(QUIET_LOAD, settings.loadWaitS, log);
    const messageFile = join(workDir, "message.txt");
    // smtp-source -F appends CRLF to every line itself.
    await writeFile(messageFile, staticMessage({ from: SENDER, to: "x@" + config.managedDomain, bytes: settings.messageBytes }).replace(/\r\n/g, "\n"));

    const systems: System[] = [];
    let ours: OurStack | undefined;
    let postfix: PeerServer | undefined;
    let haraka: PeerServer | undefined;
    if (settings.systems.includes("ours")) {
      ours = await startOurStack(
        {
          workDir,
          config,
          inboxes: settings.inboxes,
          maxConnections: settings.idleSessions + settings.sessions + 100,
          webhookRetryInitialMs: settings.webhookRetryInitialMs,
          log,
          smtpNodeArgs: profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [],
          // Acceptance alone, as every record before the in-flow delay measured it; the inflow scenario turns it on.
          smtpEnv: { INBOUND_INFLOW_DELAY: "off" },
        },
        teardown,
      );
      const stack = ours;
      systems.push({
        name: "ours",
        // The smtp role's port changes when the inflow scenario starts it again.
        get port() {
          return stack.smtpPort;
        },
        recipients: stack.withWebhook,
        pids: () => [stack.smtp.pid],
        backlog: async () => {
          const b = await stack.stats.backlog();
          return b.raw + b.deliveries;
        },
        setAside: () => stack.stats.setAside(),
      });
    }
    const recipients = ours?.withWebhook ?? Array.from({ length: settings.inboxes }, (_, i) => `agent-${i + 1}@${config.managedDomain}`);
    if (settings.systems.includes("Postfix")) {
      postfix = await startPostfix(workDir, await findFreePort(), config.managedDomain, teardown);
      const peer = postfix;
      systems.push({ name: "Postfix", port: peer.port, recipients, pids: () => peer.pids(), backlog: () => peer.backlog() });
    }
    if (settings.systems.includes("Haraka")) {
      haraka = await startHaraka(workDir, await findFreePort(), config.managedDomain, log, teardown);
      const peer = haraka;
      systems.push({ name: "Haraka", port: peer.port, recipients, pids: () => peer.pids(), backlog: () => peer.backlog() });
    }
    // Every run meters every group, so what an idle system costs during another's run shows too.
    const groups: Record<string, () => readonly number[]> = { bench: () => [process.pid] };
    if (ours) {
      const stack = ours;
      groups["smtp"] = () => [stack.smtp.pid];
      if (stack.infra.postmasterPid !== undefined) groups["postgres"] = () => withChildren(stack.infra.postmasterPid!);
      if (stack.temporalPid !== undefined) groups["temporal"] = () => [stack.temporalPid!];
      groups["api+worker"] = () => [stack.api.pid, stack.worker.pid];
      groups["receiver"] = () => [stack.receiver.pid];
    }
    if (postfix) groups["postfix"] = () => postfix!.pids();
    if (haraka) groups["haraka"] = () => haraka!.pids();
    const reapers: Record<string, () => number | undefined> = {};
    if (ours?.infra.postmasterPid !== undefined) reapers["postgres"] = () => ours!.infra.postmasterPid;
    if (postfix) reapers["postfix"] = () => postfix!.reaper();
    const ctx: Context = { settings, config, workDir, messageFile, groups, reapers, ours, runs };

    if (ours) {
      // One message end to end before anything is measured: stored, and its webhook at the receiver.
      await runInboundClient({ ...clientBase(ctx, systems[0]!), mode: "open", rate: 10, count: 1, durationS: 5, sessions: 1 });
      const drained = await drain(systems[0]!, 60);
      const taken = await ours.receiver.take();
      if (drained.left > 0 || taken.requests === 0) throw new Error("the first message did not make it through to the webhook receiver");
      log(`ours: a first message went through to the webhook at ${ours.webhookUrl}`);
    }
    // Warm-up (JIT, caches, pools) before the first load scenario; idle sessions are measured before it, on fresh
    // processes, as heap already grown by a load run would absorb the sessions' memory without any RSS change.
    let warm = settings.warmupS === 0;
    const rotate = (i: number) => systems.map((_, k) => systems[(k + i) % systems.length]!);
    for (const scenario of settings.scenarios) {
      if (!warm && scenario !== "idle") {
        for (const system of systems) {
          log(`warm-up ${system.name} (${settings.warmupS} s) …`);
          await runSmtpSource(ctx, system, settings.warmupS, true);
          await settle(ctx, system);
        }
        warm = true;
      }
      log(`— ${scenario} —`);
      if (scenario === "inflow" && ours) await inFlowDelay(ctx, systems[0]!, "on");
      for (let i = 0; i < settings.runs; i++) {
        for (const system of rotate(i)) {
          switch (scenario) {
            case "throughput":
            case "newconn":
              await throughputRun(ctx, system, i, scenario);
              break;
            case "inflow":
              // BENCH_RUNS sustained runs, each as the throughput scenario's first (the table shows their medians).
              if (system.name === "ours") await throughputRun(ctx, system, i, scenario);
              break;
            case "latency":
              await latencyRun(ctx, system, i);
              break;
            case "idle":
              // Postfix's smtpd processes outlive their sessions (max_idle), so a second run would start with them.
              if (system.name !== "Postfix" || i === 0) await idleRun(ctx, system, i);
              break;
            case "webhook":
              if (system.name === "ours" && i === 0) {
                await webhookRun(ctx, system, 0);
                if (settings.webhookFail > 0) await webhookRun(ctx, system, settings.webhookFail);
              }
              break;
            case "commits":
              if (system.name === "ours" && i === 0) {
                await commitsRun(ctx, system, true);
                await commitsRun(ctx, system, false);
              }
              break;
          }
        }
      }
      if (scenario === "inflow" && ours && scenario !== settings.scenarios.at(-1)) await inFlowDelay(ctx, systems[0]!, "off");
    }
    const logs = ours ? roleLogs([ours.smtp, ours.api, ours.worker]) : { lines: {}, tail: {} };
    report = {
      startedAt: run.startedAt.toISOString(),
      revision: run.revision,
      settings,
      machine: {
        ...machineFacts(),
        postfix: postfix ? postfixVersion() : null,
        haraka: haraka ? HARAKA_VERSION : null,
      },
      loadAtStart,
      roleLogLines: logs.lines,
      roleLogTail: logs.tail,
      runs,
    };
  } finally {
    await teardown.run();
  }
  if (!report) return;
  console.log(formatReport(report));
  const file = await run.write(report);
  console.log(`figures written to ${file}`);
  if (profileDir) {
    // The smtp role's threads each wrote a profile when it stopped; the main thread's is the one numbered 0.
    const files = (await readdir(profileDir)).filter((f) => f.endsWith(".cpuprofile")).sort();
    for (const name of files.slice(0, 2)) console.log(`\n${await summarizeCpuProfile(join(profileDir, name))}`);
  }
}

function postfixVersion(): string {
  try {
    return execFileSync("postconf", ["-d", "-h", "mail_version"], { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

await main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exit(1);
  },
);
