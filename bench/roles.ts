// `npm run bench:roles`: roles on many machines, proven on one. `mailbox serve --role …` processes — one of each
// role, then two of each — against one PostgreSQL and one Temporal dev server that the bench starts and none of
// them did (the external mode), every API process and SMTP listener loaded (bench/faults-phase.ts runs the loads
// and counts what arrived):
//
//   throughput  closed loop for BENCH_SECONDS: SMTP messages answered 250 per second over the listeners, sends
//               answered 202 per second over the API processes, and deliveries per second at the sink (until the
//               last one arrived); medians of BENCH_RUNS runs, with one and with two processes of each role
//   kill        two of each role under open-loop load; kill -9 of one process of each role at once, each started
//               again on its ports: acknowledged, lost (must be 0), duplicated (≤ 1 extra copy per message)
//
// Every process shares this machine's cores, so two of each role here measure that the roles share work and state
// correctly, not the throughput of two machines: the report prints the load average with the figures.
//
// Settings (env): BENCH_RUNS=3  BENCH_SECONDS=20  BENCH_INBOUND_SESSIONS=16  BENCH_OUTBOUND_CONCURRENCY=8
//   BENCH_MESSAGE_BYTES=2048  BENCH_KILL_INBOUND_RATE=100  BENCH_KILL_OUTBOUND_RATE=10  BENCH_DRAIN_MAX_S=180
//   BENCH_INBOXES=20  BENCH_SINK_DOMAIN=bench-sink.test  LOG_LEVEL (of our processes; error)
import { chmod, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.js";
import { brokenInvariants, runFaultPhase, SinkLedger, type PhaseFigures, type PhaseSettings } from "./faults-phase.js";
import { formatPhaseTable, THROUGHPUT_HEAD, throughputCells, type ThroughputRun } from "./faults-report.js";
import { startRolesStack } from "./faults-stacks.js";
import { loadAverage, runAsScript, startRun, type RecordHeader } from "./machine.js";
import { startSink, type Sink } from "./outbound-sink-process.js";
import { dec } from "./run-report.js";
import { Teardown } from "./stack.js";
import { envNumber } from "./settings.js";

const log = (line: string) => process.stderr.write(`${line}\n`);

function settingsFromEnv(env = process.env) {
  const num = (name: string, fallback: number) => envNumber(env, name, fallback, 0.001, 1_000_000, false);
  const seconds = num("BENCH_SECONDS", 20);
  const common = { messageBytes: num("BENCH_MESSAGE_BYTES", 2048), drainS: num("BENCH_DRAIN_MAX_S", 180) };
  const throughput: PhaseSettings = {
    ...common,
    closedLoop: true,
    inboundRate: 1,
    inboundSessions: num("BENCH_INBOUND_SESSIONS", 16),
    outboundRate: 1,
    outboundConcurrency: num("BENCH_OUTBOUND_CONCURRENCY", 8),
    // The load runs around a fault that does nothing.
    beforeS: seconds / 2,
    afterS: seconds / 2,
  };
  const kill: PhaseSettings = {
    ...common,
    inboundRate: num("BENCH_KILL_INBOUND_RATE", 100),
    inboundSessions: num("BENCH_INBOUND_SESSIONS", 16),
    outboundRate: num("BENCH_KILL_OUTBOUND_RATE", 10),
    outboundConcurrency: num("BENCH_OUTBOUND_CONCURRENCY", 8),
    beforeS: 10,
    afterS: 20,
  };
  return { runs: num("BENCH_RUNS", 3), seconds, throughput, kill, inboxes: num("BENCH_INBOXES", 20), sinkDomain: (env["BENCH_SINK_DOMAIN"] || "bench-sink.test").toLowerCase() };
}

/** What bench/results/roles-<time>.json holds. */
export interface RolesRecord extends RecordHeader {
  readonly settings: ReturnType<typeof settingsFromEnv>;
  readonly throughput: readonly ThroughputRun[];
  /** kill -9 of one process of each role at once, two of each running. */
  readonly killPhase: PhaseFigures | undefined;
  readonly broken: readonly string[];
}

const NO_FAULT = { name: "none", inflict: async () => undefined };

async function main(): Promise<void> {
  const settings = settingsFromEnv();
  const config = loadConfig();
  const benchRun = startRun("roles");
  const teardown = new Teardown();
  const workDir = await mkdtemp(join(tmpdir(), "mailbox-roles-"));
  await chmod(workDir, 0o755); // PostgreSQL runs as an unprivileged user when we are root
  const phaseS = (p: PhaseSettings) => p.beforeS + p.afterS + p.drainS + 120;
  const hardLimitS = 2 * 300 + 2 * settings.runs * phaseS(settings.throughput) + phaseS(settings.kill) + 300;
  const hardLimit = setTimeout(() => {
    log(`roles: hard time limit (${hardLimitS} s) reached; stopping`);
    void teardown.run().finally(() => process.exit(3));
  }, hardLimitS * 1000);
  hardLimit.unref();
  const throughput: ThroughputRun[] = [];
  let killPhase: PhaseFigures | undefined;
  let phaseNo = 0;
  const tag = () => `r${++phaseNo}-${Date.now().toString(36)}`;
  try {
    const sink: Sink = await startSink({ greetingDelayMs: 0, deferAttempts: 1 }, teardown);
    const ledger = new SinkLedger(sink);
    for (const replicas of [1, 2]) {
      // A deployment of its own (fresh PostgreSQL and Temporal) for each count of processes.
      const deployment = new Teardown();
      const dir = join(workDir, `x${replicas}`);
      await mkdir(dir, { mode: 0o755 });
      try {
        const stack = await startRolesStack({ workDir: dir, config, sink, sinkDomain: settings.sinkDomain, inboxes: settings.inboxes, log, replicas }, deployment);
        for (let run = 1; run <= settings.runs; run++) {
          log(`${replicas} of each role, run ${run}: ${settings.seconds} s closed loop`);
          const loadBefore = loadAverage()[0];
          const phase = await runFaultPhase(stack.target, NO_FAULT, settings.throughput, ledger, tag(), log);
          const loadS = settings.throughput.beforeS + settings.throughput.afterS + phase.downtimeS;
          throughput.push({
            replicas,
            run,
            inboundPerS: phase.inbound.acknowledged / loadS,
            acceptedPerS: phase.outbound.acknowledged / loadS,
            deliveredPerS: phase.outbound.arrived / (loadS + phase.drainS),
            lost: phase.inbound.lost + phase.outbound.lost,
            load: [loadBefore, loadAverage()[0]],
            phase,
          });
          const last = throughput.at(-1)!;
          log(`  250/s ${dec(last.inboundPerS)}, 202/s ${dec(last.acceptedPerS)}, delivered/s ${dec(last.deliveredPerS)}, lost ${last.lost}`);
        }
        if (replicas === 2) {
          const fault = stack.faults["roles"]!;
          log(`${fault.name}, under load`);
          killPhase = await runFaultPhase(stack.target, fault, settings.kill, ledger, tag(), log);
        }
      } finally {
        await deployment.run();
      }
    }
  } finally {
    await teardown.run();
    await rm(workDir, { recursive: true, force: true });
  }

  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(18) : i === 5 ? `  ${c}` : c.padStart(12))).join("  ");
  const broken = [
    ...throughput.filter((t) => t.lost > 0).map((t) => `${t.replicas} of each, run ${t.run}: ${t.lost} acknowledged message(s) lost`),
    ...(killPhase ? brokenInvariants(killPhase).map((b) => `${killPhase!.fault}: ${b}`) : ["the kill phase did not run"]),
  ];
  console.log(
    [
      `bench:roles — revision ${benchRun.revision}, ${benchRun.startedAt.toISOString()}; ${settings.seconds} s closed loop per run, medians of ${settings.runs} runs; ` +
        `${settings.throughput.inboundSessions} SMTP sessions and ${settings.throughput.outboundConcurrency} API senders spread over the processes`,
      "",
      line(THROUGHPUT_HEAD),
      line(throughputCells(throughput, 1)),
      line(throughputCells(throughput, 2)),
      "",
      killPhase ? formatPhaseTable([killPhase]) : "kill phase: not run",
      "",
      broken.length === 0 ? "invariants: PASS (nothing acknowledged lost, ≤ 1 extra copy per message, same Message-ID)" : `invariants: FAIL\n  ${broken.join("\n  ")}`,
    ].join("\n"),
  );
  const file = await benchRun.write({ settings, throughput, killPhase, broken });
  log(`written ${file}`);
  process.exit(broken.length === 0 ? 0 : 1);
}

runAsScript(import.meta.url, "roles", main);
