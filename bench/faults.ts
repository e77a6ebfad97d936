// `npm run bench:faults`: what survives a crash. Inbound SMTP load and outbound API load run together while a
// fault strikes, one phase per fault (bench/faults-phase.ts counts acknowledged, arrived, lost and duplicated):
//
//   start      kill -9 of the whole `mailbox start`, then the same command again (its embedded servers must go
//              down with it and the next start must serve the same data)
//   smtp, api, worker   kill -9 of that role (`mailbox serve --role …`, each its own process), then it again
//   postgres   PostgreSQL restarted under the roles (fast shutdown: every connection cut)
//   temporal   the Temporal dev server restarted under the roles (its state on disk)
//
// Invariants checked at the end (exit code 1 when one fails): nothing acknowledged (250 / 202) is lost; no message
// arrives more than once per fault (≤ 2 copies); every copy at the sink has the Message-ID of its 202; the service
// acknowledges again after each fault. Loopback only; every phase, drain and process is bounded; a default run
// takes about 10 minutes.
//
// Settings (env): BENCH_FAULTS=start,smtp,api,worker,postgres,temporal  BENCH_INBOUND_RATE=100
//   BENCH_INBOUND_SESSIONS=20  BENCH_MESSAGE_BYTES=2048  BENCH_OUTBOUND_RATE=10  BENCH_OUTBOUND_CONCURRENCY=8
//   BENCH_BEFORE_S=10  BENCH_AFTER_S=20  BENCH_DRAIN_MAX_S=300  BENCH_INBOXES=20  BENCH_SINK_DOMAIN=bench-sink.test
//   LOG_LEVEL (of our processes; error)
import { chmod, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.js";
import { brokenInvariants, runFaultPhase, SinkLedger, type LoadFigures, type PhaseFigures, type PhaseSettings } from "./faults-phase.js";
import { formatPhaseTable } from "./faults-report.js";
import { startRolesStack, startWholeStack, type FaultStack, type StackOptions } from "./faults-stacks.js";
import { loadAverage, runAsScript, startRun, type RecordHeader } from "./machine.js";
import { startSink } from "./outbound-sink-process.js";
import { Teardown } from "./stack.js";
import { envNumber } from "./settings.js";

const FAULTS = ["start", "smtp", "api", "worker", "postgres", "temporal"] as const;

const log = (line: string) => process.stderr.write(`${line}\n`);
const count = (n: number) => n.toLocaleString("en-US");

function settingsFromEnv(env = process.env) {
  const num = (name: string, fallback: number) => envNumber(env, name, fallback, 0.001, 1_000_000, false);
  const faults = (env["BENCH_FAULTS"] || FAULTS.join(",")).split(",").map((f) => f.trim());
  for (const f of faults) if (!(FAULTS as readonly string[]).includes(f)) throw new Error(`BENCH_FAULTS: unknown fault "${f}" (${FAULTS.join(", ")})`);
  const phase: PhaseSettings = {
    inboundRate: num("BENCH_INBOUND_RATE", 100),
    inboundSessions: num("BENCH_INBOUND_SESSIONS", 20),
    messageBytes: num("BENCH_MESSAGE_BYTES", 2048),
    outboundRate: num("BENCH_OUTBOUND_RATE", 10),
    outboundConcurrency: num("BENCH_OUTBOUND_CONCURRENCY", 8),
    beforeS: num("BENCH_BEFORE_S", 10),
    afterS: num("BENCH_AFTER_S", 20),
    drainS: num("BENCH_DRAIN_MAX_S", 300),
  };
  return { faults, phase, inboxes: num("BENCH_INBOXES", 20), sinkDomain: (env["BENCH_SINK_DOMAIN"] || "bench-sink.test").toLowerCase() };
}

/** What bench/results/faults-<time>.json holds. */
export interface FaultsRecord extends RecordHeader {
  readonly settings: ReturnType<typeof settingsFromEnv>;
  readonly phases: readonly PhaseFigures[];
  /** The invariants broken, as sentences; empty when the run held them all. */
  readonly broken: readonly string[];
}

async function main(): Promise<void> {
  const settings = settingsFromEnv();
  const config = loadConfig();
  const run = startRun("faults");
  const teardown = new Teardown();
  const workDir = await mkdtemp(join(tmpdir(), "mailbox-faults-"));
  await chmod(workDir, 0o755); // PostgreSQL runs as an unprivileged user when we are root
  // Whatever happens, the run ends: every phase's own bounds plus starts and a margin.
  const hardLimitS = settings.faults.length * (settings.phase.beforeS + settings.phase.afterS + settings.phase.drainS + 300) + 600;
  const hardLimit = setTimeout(() => {
    log(`faults: hard time limit (${hardLimitS} s) reached; stopping`);
    void teardown.run().finally(() => process.exit(3));
  }, hardLimitS * 1000);
  hardLimit.unref();
  const phases: PhaseFigures[] = [];
  try {
    const sink = await startSink({ greetingDelayMs: 0, deferAttempts: 1 }, teardown);
    const ledger = new SinkLedger(sink);
    const stackOptions = (dir: string): StackOptions => ({ workDir: join(workDir, dir), config, sink, sinkDomain: settings.sinkDomain, inboxes: settings.inboxes, log });
    const runPhases = async (stack: FaultStack, names: readonly string[]) => {
      for (const name of names) {
        const fault = stack.faults[name]!;
        log(`phase ${phases.length + 1}: ${fault.name}`);
        const figures = await runFaultPhase(stack.target, fault, settings.phase, ledger, `f${phases.length + 1}-${Date.now().toString(36)}`, log);
        phases.push(figures);
        log(`  inbound ${figures.inbound.acknowledged} acknowledged, ${figures.inbound.lost} lost; outbound ${figures.outbound.acknowledged} acknowledged, ${figures.outbound.lost} lost (drained in ${figures.drainS.toFixed(0)} s)`);
      }
    };
    if (settings.faults.includes("start")) {
      const whole = new Teardown();
      await mkdir(join(workDir, "whole"), { mode: 0o755 });
      try {
        await runPhases(await startWholeStack(stackOptions("whole"), whole), ["start"]);
      } finally {
        await whole.run();
      }
    }
    const roleFaults = settings.faults.filter((f) => f !== "start");
    if (roleFaults.length > 0) {
      await mkdir(join(workDir, "roles"), { mode: 0o755 });
      await runPhases(await startRolesStack(stackOptions("roles"), teardown), roleFaults);
    }
  } finally {
    await teardown.run();
    await rm(workDir, { recursive: true, force: true });
  }

  const loadAfter = loadAverage();
  const header =
    `bench:faults — revision ${run.revision}, ${run.startedAt.toISOString()}; load average ${run.loadBefore.map((l) => l.toFixed(2)).join(" ")} before, ` +
    `${loadAfter.map((l) => l.toFixed(2)).join(" ")} after; inbound ${settings.phase.inboundRate} msg/s on ${settings.phase.inboundSessions} sessions, ` +
    `outbound ${settings.phase.outboundRate} msg/s; ${settings.phase.beforeS} s of load before each fault, ${settings.phase.afterS} s after`;
  const broken = phases.flatMap((p) => brokenInvariants(p).map((b) => `${p.fault}: ${b}`));
  const totals = (pick: (p: PhaseFigures) => LoadFigures) =>
    `${count(phases.reduce((n, p) => n + pick(p).acknowledged, 0))} acknowledged → ${count(phases.reduce((n, p) => n + pick(p).lost, 0))} lost, ` +
    `${count(phases.reduce((n, p) => n + pick(p).duplicated, 0))} duplicated`;
  console.log(
    [
      header,
      "",
      formatPhaseTable(phases),
      "",
      `total: inbound ${totals((p) => p.inbound)}; outbound ${totals((p) => p.outbound)}`,
      broken.length === 0 ? "invariants: PASS (nothing acknowledged lost, ≤ 1 extra copy per fault, same Message-ID, serving after each fault)" : `invariants: FAIL\n  ${broken.join("\n  ")}`,
    ].join("\n"),
  );
  const file = await run.write({ settings, phases, broken });
  log(`written ${file}`);
  process.exit(broken.length === 0 ? 0 : 1);
}

runAsScript(import.meta.url, "faults", main);
