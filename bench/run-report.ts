// What the SMTP benchmarks (bench:inbound, bench:outbound) record per run and how their reports print it: the run
// record's common part, percentiles, number formats, and the table of where the CPU went.
import type { CpuShare } from "./cpu.js";
import type { LoadSpan } from "./machine.js";
import { median } from "./report.js";

/** One run of a scenario on one system; its load span is from just before the run to its end. */
export interface BaseRunRecord<System extends string> extends LoadSpan {
  readonly scenario: string;
  readonly system: System;
  readonly run: number;
  readonly seconds: number;
  readonly cpu: CpuShare;
  readonly failures: number;
  readonly error: string | null;
  readonly figures: Readonly<Record<string, number>>;
}

/** One line of a report's main table: a figure for each system, the target and ours' verdict where there is one. */
export interface FigureRow<System extends string> {
  readonly label: string;
  readonly values: Readonly<Partial<Record<System, string>>>;
  readonly target?: string;
  readonly verdict?: boolean;
}

/** The nearest-rank percentile `p` (0–100) of `values`; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Number formats of the reports; "—" for a figure not measured. */
export const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "—");
export const ms = (n: number) => (Number.isFinite(n) ? (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : int(n)) : "—");
export const dec = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : "—");

/**
 * Cores per process group for every scenario and system (medians over runs; other = outside the processes named),
 * with each run's 1-minute load average before → at its end.
 */
export function cpuTable<System extends string>(
  runs: readonly BaseRunRecord<System>[],
  systems: readonly System[],
  scenarioWidth: number,
): string[] {
  const groups = [...new Set(runs.flatMap((r) => Object.keys(r.cpu.groups)))];
  const width = (g: string) => Math.max(8, g.length + 1);
  const lines = [
    ["scenario".padEnd(scenarioWidth), "system".padEnd(8), ...groups.map((g) => g.padStart(width(g))), "other".padStart(7), "machine".padStart(8), "  load before → end (1 min)"].join(""),
  ];
  for (const scenario of [...new Set(runs.map((r) => r.scenario))]) {
    for (const system of systems) {
      const rs = runs.filter((r) => r.scenario === scenario && r.system === system);
      if (rs.length === 0) continue;
      lines.push(
        [
          scenario.padEnd(scenarioWidth),
          system.padEnd(8),
          ...groups.map((g) => dec(median(rs.map((r) => r.cpu.groups[g] ?? 0))).padStart(width(g))),
          dec(median(rs.map((r) => r.cpu.otherCores))).padStart(7),
          dec(median(rs.map((r) => r.cpu.machineCores))).padStart(8),
          `  ${rs.map((r) => `${(r.loadBefore[0] ?? 0).toFixed(2)}→${(r.loadAfter[0] ?? 0).toFixed(2)}`).join(", ")}`,
        ].join(""),
      );
    }
  }
  return lines;
}
