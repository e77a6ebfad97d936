// Medians over runs, verdicts against the targets, the printed table and the JSON record.
import type { CpuShare } from "./cpu.js";
import type { RunFigures, Scenario } from "./load.js";

/** CPU used outside the benchmark's processes above which a run is flagged: something else competed for the cores. */
export const DISTURBED_CORES = 0.25;

export interface ScenarioRuns {
  readonly scenario: Scenario;
  readonly ours: RunFigures[];
  readonly baseline: RunFigures[];
  /** The same runs at one fixed request rate, when measured. */
  readonly fixedRate?: { readonly rate: number; readonly ours: RunFigures[]; readonly baseline: RunFigures[] };
}

export interface SideSummary {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly invalidRuns: number;
  readonly disturbedRuns: number;
  readonly cpu: CpuShare;
  /** Milliseconds of CPU per request, per process group. */
  readonly cpuMsPerRequest: Readonly<Record<string, number>>;
  /** Lowest and highest 1-minute load average seen at a run's start or end. */
  readonly loadAverage: readonly [number, number];
}

export interface ScenarioSummary {
  readonly scenario: Scenario;
  readonly ours: SideSummary;
  readonly baseline: SideSummary;
  /** Median throughput of ours over the baseline's. */
  readonly ratio: number;
  readonly verdicts: { readonly p99: boolean; readonly ratio: boolean };
  readonly fixedRate?: { readonly rate: number; readonly ours: SideSummary; readonly baseline: SideSummary };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function summarizeSide(runs: readonly RunFigures[]): SideSummary {
  const groups = Object.keys(runs[0]?.cpu.groups ?? {});
  return {
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    invalidRuns: runs.filter((r) => r.failures > 0).length,
    disturbedRuns: runs.filter((r) => r.cpu.otherCores > DISTURBED_CORES).length,
    cpu: {
      machineCores: median(runs.map((r) => r.cpu.machineCores)),
      otherCores: median(runs.map((r) => r.cpu.otherCores)),
      groups: Object.fromEntries(groups.map((g) => [g, median(runs.map((r) => r.cpu.groups[g]!))])),
    },
    cpuMsPerRequest: Object.fromEntries(groups.map((g) => [g, median(runs.map((r) => r.cpuMsPerRequest[g]!))])),
    loadAverage: [Math.min(...runs.flatMap((r) => r.loadAverage)), Math.max(...runs.flatMap((r) => r.loadAverage))],
  };
}

export function summarize(runs: ScenarioRuns): ScenarioSummary {
  const ours = summarizeSide(runs.ours);
  const baseline = summarizeSide(runs.baseline);
  const ratio = ours.requestsPerSecond / baseline.requestsPerSecond;
  const { target } = runs.scenario;
  const fixed = runs.fixedRate;
  return {
    scenario: runs.scenario,
    ours,
    baseline,
    ...(fixed ? { fixedRate: { rate: fixed.rate, ours: summarizeSide(fixed.ours), baseline: summarizeSide(fixed.baseline) } } : {}),
    ratio,
    verdicts: {
      p99: ours.invalidRuns === 0 && ours.p99Ms <= target.p99Ms,
      ratio: ours.invalidRuns === 0 && baseline.invalidRuns === 0 && ratio >= target.ratio,
    },
  };
}

const verdict = (ok: boolean) => (ok ? "PASS" : "MISS");
const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => n.toFixed(1);
const cores = (n: number) => n.toFixed(2);
const cpuMs = (n: number) => n.toFixed(3);

export interface TableContext {
  readonly header: string;
  /** Keys used round robin, and how long a server trusts a key it read. */
  readonly keys: number;
  readonly keyCacheMs: number;
}

export function formatTable(summaries: readonly ScenarioSummary[], runs: readonly ScenarioRuns[], context: TableContext): string {
  const lines = [context.header, ""];
  summaries.forEach((s, i) => lines.push(...scenarioLines(s, runs[i]!, context), ""));
  return lines.join("\n");
}

function scenarioLines(s: ScenarioSummary, runs: ScenarioRuns, context: TableContext): string[] {
  const { scenario, ratio, verdicts } = s;
  const groups = Object.keys(s.ours.cpu.groups);
  const sideRow = (name: string, side: SideSummary) =>
    row([
      name,
      int(side.requestsPerSecond),
      ms(side.p50Ms),
      ms(side.p99Ms),
      String(side.invalidRuns),
      String(side.disturbedRuns),
      ...groups.map((g) => cores(side.cpu.groups[g]!)),
      cores(side.cpu.otherCores),
      cores(side.cpu.machineCores),
    ]);
  const cpuRow = (name: string, side: SideSummary) =>
    `    ${name.padEnd(9)}${groups.map((g) => `${g} ${cpuMs(side.cpuMsPerRequest[g]!)}`).join("   ")}` +
    `   (load average ${side.loadAverage[0].toFixed(1)}–${side.loadAverage[1].toFixed(1)})`;
  const times = (ours: SideSummary, baseline: SideSummary) =>
    `    server CPU per request: ours ×${(ours.cpuMsPerRequest["server"]! / baseline.cpuMsPerRequest["server"]!).toFixed(2)} the baseline's`;
  const perRun = (label: string, r: { ours: readonly RunFigures[]; baseline: readonly RunFigures[] }, f: (r: RunFigures) => string) => [
    `  per run ${label.padEnd(26)} ours: ${r.ours.map(f).join(", ")}`,
    `  ${"".padEnd(34)} baseline: ${r.baseline.map(f).join(", ")}`,
  ];
  // Round robin brings a key back every keys / throughput seconds; beyond the cache time every request reads it.
  const recurrence = (side: SideSummary) => `${(context.keys / side.requestsPerSecond).toFixed(1)} s`;
  const header = row(["", "req/s", "p50 ms", "p99 ms", "invalid", "disturbed", ...groups.map((g) => `${g} cores`), "other cores", "machine cores"]);
  const lines = [
    `${scenario.name} — ${scenario.connections} connections, as fast as each answers (medians over runs)`,
    header,
    sideRow("ours", s.ours),
    sideRow("baseline", s.baseline),
    `  CPU ms per request (a slower server reads more keys per request: compare at the fixed rate below)`,
    cpuRow("ours", s.ours),
    cpuRow("baseline", s.baseline),
    ...perRun("req/s", runs, (r) => int(r.requestsPerSecond)),
    ...perRun("server CPU ms/request", runs, (r) => cpuMs(r.cpuMsPerRequest["server"]!)),
    `  a key comes back every ${recurrence(s.ours)} (ours), ${recurrence(s.baseline)} (baseline); keys are cached ${context.keyCacheMs / 1000} s`,
    `  ours p99 ≤ ${scenario.target.p99Ms} ms: ${verdict(verdicts.p99)}` +
      `   ours/baseline ${(ratio * 100).toFixed(0)}% ≥ ${scenario.target.ratio * 100}%: ${verdict(verdicts.ratio)}`,
  ];
  const fixed = s.fixedRate;
  if (fixed && runs.fixedRate) {
    lines.push(
      `  at a fixed ${int(fixed.rate)} req/s, the same keys for both (medians over runs)`,
      header,
      sideRow("ours", fixed.ours),
      sideRow("baseline", fixed.baseline),
      `  CPU ms per request at that rate`,
      cpuRow("ours", fixed.ours),
      cpuRow("baseline", fixed.baseline),
      times(fixed.ours, fixed.baseline),
      ...perRun("server CPU ms/request", runs.fixedRate, (r) => cpuMs(r.cpuMsPerRequest["server"]!)),
    );
  }
  return lines;
}

function row(cells: readonly string[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(10) : c.padStart(i >= 6 ? 15 : 9))).join(" ");
}
