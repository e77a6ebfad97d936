// The tables of bench:faults and bench:roles, printed by the benchmarks and rendered into docs/benchmarks.md from
// their records: each load's acknowledged, arrived, lost and duplicated per fault, and roles' throughput per count
// of processes. Types only from the modules that run the loads, so the page generator loads none of them.
import type { LoadFigures, PhaseFigures } from "./faults-phase.js";
import { median } from "./report.js";
import { dec } from "./run-report.js";

const count = (n: number) => n.toLocaleString("en-US");

/** Column heads of the per-phase table (one table per load). */
export const PHASE_HEAD = ["fault", "down s", "sent", "ack", "after", "arrived", "lost", "dup", "unacked arrived"] as const;

/** The two loads of a phase, with what their figures mean. */
export const LOADS = [
  { title: "inbound SMTP", pick: (p: PhaseFigures): LoadFigures => p.inbound },
  { title: "outbound API", pick: (p: PhaseFigures): LoadFigures => p.outbound },
] as const;

/** One phase's cells under PHASE_HEAD for one load. */
export function phaseCells(p: PhaseFigures, f: LoadFigures): string[] {
  return [p.fault, p.downtimeS.toFixed(1), count(f.sent), count(f.acknowledged), count(f.acknowledgedAfter), count(f.arrived), count(f.lost), count(f.duplicated), count(f.arrivedUnacknowledged)];
}

/** What was not acknowledged in a phase, by reply: "f: not acknowledged 451 ×45, ECONNRESET ×20"; none when all were. */
export function refusedNote(p: PhaseFigures, f: LoadFigures): string | undefined {
  const refused = Object.entries(f.refused);
  return refused.length === 0 ? undefined : `${p.fault}: not acknowledged ${refused.map(([k, n]) => `${k} ×${n}`).join(", ")}`;
}

/** The per-phase table of bench:faults and bench:roles as the benchmarks print it. */
export function formatPhaseTable(phases: readonly PhaseFigures[]): string {
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(46) : c.padStart(i === 8 ? 16 : 8))).join("");
  const rows = ({ title, pick }: (typeof LOADS)[number]) => [
    `${title} (ack = 250 / 202 · after = acknowledged once the service was back · arrived = stored / at the sink)`,
    line(PHASE_HEAD),
    ...phases.map((p) => line(phaseCells(p, pick(p)))),
    ...phases.flatMap((p) => refusedNote(p, pick(p)) ?? []).map((note) => `  ${note}`),
  ];
  return [...rows(LOADS[0]), "", ...rows(LOADS[1])].join("\n");
}

/** One closed-loop run of bench:roles with `replicas` processes of each role. */
export interface ThroughputRun {
  readonly replicas: number;
  readonly run: number;
  /** 250 per second, 202 per second over the load; delivered per second until the last delivery. */
  readonly inboundPerS: number;
  readonly acceptedPerS: number;
  readonly deliveredPerS: number;
  readonly lost: number;
  readonly load: readonly number[];
  readonly phase: PhaseFigures;
}

/** Column heads of bench:roles' throughput table. */
export const THROUGHPUT_HEAD = ["processes", "SMTP 250/s", "API 202/s", "delivered/s", "lost", "load average before→after, per run"] as const;

/** bench:roles' throughput row for `replicas` of each role: medians over its runs, losses summed, each run's load. */
export function throughputCells(throughput: readonly ThroughputRun[], replicas: number): string[] {
  const runs = throughput.filter((t) => t.replicas === replicas);
  const m = (pick: (t: ThroughputRun) => number) => dec(median(runs.map(pick)));
  return [
    `${replicas} of each role`,
    m((t) => t.inboundPerS),
    m((t) => t.acceptedPerS),
    m((t) => t.deliveredPerS),
    String(runs.reduce((n, t) => n + t.lost, 0)),
    runs.map((t) => t.load.map((l) => l.toFixed(1)).join("→")).join(", "),
  ];
}
