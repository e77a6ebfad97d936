// The figures of each benchmark's newest record as Markdown, for docs/benchmarks.md (bench/page.ts): the same
// tables the benchmarks print, ours beside the peer's, from the JSON they wrote. The benchmark modules are imported
// for their types only (they start their work when loaded); the row builders are the ones their reports use.
import type { ApiRecord } from "./api.js";
import type { AuthenticationRecord } from "./authentication.js";
import type { CliRecord } from "./cli.js";
import type { FaultsRecord } from "./faults.js";
import { LOADS, PHASE_HEAD, phaseCells, refusedNote, THROUGHPUT_HEAD, throughputCells } from "./faults-report.js";
import type { PhaseFigures } from "./faults-phase.js";
import { inboundFigureRows, type Report as InboundReport } from "./inbound-report.js";
import type { RecordHeader } from "./machine.js";
import { outboundFigureRows, type OutboundReport } from "./outbound-report.js";
import { median, type ScenarioSummary, type SideSummary } from "./report.js";
import type { RolesRecord } from "./roles.js";
import { dec, int, ms, type FigureRow } from "./run-report.js";
import type { SideFigures, ValidateRecord } from "./validate.js";

/** A GitHub-flavoured Markdown table; `|` in a cell is escaped, an empty cell stays a cell. */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const cell = (c: string) => c.trim().replace(/\|/g, "\\|") || " ";
  return [head, head.map(() => "---"), ...rows].map((r) => `| ${r.map(cell).join(" | ")} |`).join("\n");
}

const verdict = (met: boolean | undefined) => (met === undefined ? "" : met ? "met" : "missed");

/**
 * A report's main table: a column per system, the target and ours' verdict. Labels the reports indent are
 * sub-figures of the row above (↳); rows without any figure are the report's notes, set below the table.
 */
function figureTable<System extends string>(systems: readonly System[], rows: readonly FigureRow<System>[]): string {
  const figures = rows.filter((r) => Object.keys(r.values).length > 0 || r.target !== undefined);
  const notes = rows.filter((r) => !figures.includes(r)).map((r) => r.label.trim().replace(/^\((.*)\)$/, "$1"));
  const label = (l: string) => (l.startsWith(" ") ? `↳ ${l.trim()}` : l);
  const table = markdownTable(
    ["", ...systems, "target", "verdict"],
    figures.map((r) => [label(r.label), ...systems.map((s) => r.values[s] ?? ""), r.target ?? "", verdict(r.verdict)]),
  );
  return [table, ...notes.map((n) => `\n*${n}.*`)].join("\n");
}

function cliFigures(record: CliRecord): string {
  return [
    `${record.runs} interleaved runs of each command, medians.`,
    "",
    markdownTable(
      ["command", "median ms (min–max)", "CPU ms", "target"],
      record.rows.map((r) => [
        `\`${r.name}\``,
        `${int(r.medianMs)} (${int(r.minMs)}–${int(r.maxMs)})`,
        int(r.cpuMs),
        r.targetMs === null ? "" : `≤ ${int(r.targetMs)}: ${verdict(r.meetsTarget ?? undefined)}`,
      ]),
    ),
  ].join("\n");
}

function apiFigures(record: ApiRecord): string {
  const { settings } = record;
  const cpu = (side: SideSummary, group: string) => dec(side.cpuMsPerRequest[group] ?? Number.NaN);
  const pair = (ours: SideSummary, baseline: SideSummary, group: string) => `${cpu(ours, group)} / ${cpu(baseline, group)}`;
  const runsNote = (s: ScenarioSummary) => `${s.ours.invalidRuns} / ${s.ours.disturbedRuns}; ${s.baseline.invalidRuns} / ${s.baseline.disturbedRuns}`;
  const fixed = settings.fixedRate > 0 ? ` at ${int(settings.fixedRate)} req/s` : "";
  return [
    `${settings.runs} runs × ${settings.durationS} s per server and scenario (medians), keys cached ${record.keyCacheMs / 1000} s on both servers` +
      (settings.fixedRate > 0 ? `; then as many runs at a fixed ${int(settings.fixedRate)} req/s, where CPU per request compares like with like.` : "."),
    "",
    markdownTable(
      [
        "scenario",
        "ours req/s",
        "ours p99 ms",
        "baseline req/s",
        "baseline p99 ms",
        "ours/baseline",
        "server CPU ms/request, ours / baseline",
        `the same${fixed}`,
        `PostgreSQL CPU ms/request${fixed}, ours / baseline`,
        "targets: ratio, p99",
        "runs invalid / disturbed: ours; baseline",
      ],
      record.summaries.map((s) => [
        `\`${s.scenario.name}\`, ${s.scenario.connections} connections`,
        int(s.ours.requestsPerSecond),
        ms(s.ours.p99Ms),
        int(s.baseline.requestsPerSecond),
        ms(s.baseline.p99Ms),
        `${(s.ratio * 100).toFixed(0)}%`,
        pair(s.ours, s.baseline, "server"),
        s.fixedRate ? pair(s.fixedRate.ours, s.fixedRate.baseline, "server") : "–",
        s.fixedRate ? pair(s.fixedRate.ours, s.fixedRate.baseline, "postgres") : "–",
        `≥ ${s.scenario.target.ratio * 100}%: ${verdict(s.verdicts.ratio)}; ≤ ${s.scenario.target.p99Ms} ms: ${verdict(s.verdicts.p99)}`,
        runsNote(s),
      ]),
    ),
  ].join("\n");
}

function validateFigures(record: ValidateRecord): string {
  const med = (figures: SideFigures, cache: "cold" | "warm", p: "p50" | "p99") => median(figures[cache].map((f) => f[p]));
  const side = (name: string, figures: SideFigures, withVerdict: boolean) => {
    const p99 = (cache: "cold" | "warm", limit: number) => `${dec(med(figures, cache, "p99"))}${withVerdict ? ` (${verdict(med(figures, cache, "p99") <= limit)})` : ""}`;
    return [name, dec(med(figures, "cold", "p50")), p99("cold", record.targets.coldP99Ms), dec(med(figures, "warm", "p50")), p99("warm", record.targets.warmP99Ms)];
  };
  return [
    `${record.addresses} addresses over ${record.domains} domains per bulk call, DNS answers after 1–30 ms; ${record.settings.runs} runs of ` +
      `${record.settings.coldCalls} cold and ${record.settings.warmCalls} warm calls each (medians of the runs); the slowest single DNS answer ` +
      `took ${dec(record.slowestAnswerMs)} ms.`,
    "",
    markdownTable(
      ["", "cold p50 ms", "cold p99 ms", "warm p50 ms", "warm p99 ms"],
      [
        side("`POST /v1/validate/bulk` (HTTP)", record.api, true),
        side("peer: the validator in-process", record.peer, false),
        ["target (p99)", "", `≤ ${dec(record.targets.coldP99Ms)}`, "", `≤ ${dec(record.targets.warmP99Ms)}`],
      ],
    ),
  ].join("\n");
}

function inboundFigures(record: InboundReport & RecordHeader): string {
  const { systems, rows } = inboundFigureRows(record);
  const peers = [record.machine["postfix"] ? `Postfix ${String(record.machine["postfix"])}` : "", record.machine["haraka"] ? `Haraka ${String(record.machine["haraka"])}` : ""].filter((p) => p !== "");
  return [
    `${record.settings.runs} runs per scenario and system (medians), ${int(record.settings.messageBytes)}-byte messages, ` +
      `${record.settings.sessions} sessions; the first throughput run lasts ${record.settings.sustainedS} s` +
      `${peers.length > 0 ? `; peers: ${peers.join(", ")}` : ""}. Load average when the measuring began (after the wait for a quiet machine): ${dec(record.loadAtStart)}.`,
    "",
    figureTable(systems, rows),
  ].join("\n");
}

function outboundFigures(record: OutboundReport & RecordHeader): string {
  const { systems, rows } = outboundFigureRows(record);
  const { settings } = record;
  return [
    `${settings.runs} runs per scenario and system (medians), ${int(settings.textBytes)}-byte text bodies, one recipient each; retries of ` +
      `deferred recipients start after ${settings.retryInitial} on both systems` +
      `${record.machine["postfix"] ? `; peer: Postfix ${String(record.machine["postfix"])}` : ""}. Load average when the measuring began: ${dec(record.loadAtStart)}.`,
    "",
    figureTable(systems, rows),
  ].join("\n");
}

/** Each load's per-phase table with what was not acknowledged below it. */
function phaseTables(phases: readonly PhaseFigures[]): string {
  return LOADS.map(({ title, pick }) => {
    const notes = phases.flatMap((p) => refusedNote(p, pick(p)) ?? []);
    return [`*${title}* (ack = 250 / 202 · after = acknowledged once the service was back · arrived = stored / at the sink)`, "", markdownTable(PHASE_HEAD, phases.map((p) => phaseCells(p, pick(p)))), ...notes.map((n) => `\n${n}`)].join("\n");
  }).join("\n\n");
}

const invariants = (broken: readonly string[], held: string) =>
  broken.length === 0 ? `Invariants held: ${held}.` : `**Invariants broken:**\n\n${broken.map((b) => `- ${b}`).join("\n")}`;

function faultsFigures(record: FaultsRecord): string {
  const p = record.settings.phase;
  return [
    `Inbound ${p.inboundRate} msg/s on ${p.inboundSessions} sessions, outbound ${p.outboundRate} msg/s; ${p.beforeS} s of load before each fault and ${p.afterS} s after it.`,
    "",
    phaseTables(record.phases),
    "",
    invariants(record.broken, "nothing acknowledged lost, at most one extra copy per fault, every copy with its Message-ID, serving after each fault"),
  ].join("\n");
}

function rolesFigures(record: RolesRecord): string {
  const { settings } = record;
  return [
    `${settings.seconds} s closed loop per run, medians of ${settings.runs} runs; ${settings.throughput.inboundSessions} SMTP sessions and ` +
      `${settings.throughput.outboundConcurrency} API senders spread over the processes.`,
    "",
    markdownTable(THROUGHPUT_HEAD, [1, 2].map((replicas) => throughputCells(record.throughput, replicas))),
    "",
    record.killPhase ? phaseTables([record.killPhase]) : "The kill phase did not run.",
    "",
    invariants(record.broken, "nothing acknowledged lost, at most one extra copy per message, every copy with its Message-ID"),
  ].join("\n");
}

function authenticationFigures(record: AuthenticationRecord): string {
  const { settings, figures } = record;
  const phases = ["cold", "warm"] as const;
  return [
    `${settings.cold} messages one at a time from domains never seen (cold), then ${settings.warm} from one domain with ${settings.concurrency} in flight (warm); ` +
      `DNS answers held ${settings.dnsDelayMs} ms; peer: mailauth's own authenticate() over the same caching resolver. Load average at the start: ${dec(record.loadBefore[0] ?? Number.NaN)}.`,
    "",
    markdownTable(
      ["phase", "side", "CPU ms/msg", "DNS questions/msg", "msg/s", "p50 ms", "p99 ms"],
      phases.flatMap((phase) =>
        (["ours", "peer"] as const).flatMap((side) => {
          const f = figures[`${side} ${phase}`];
          return f ? [[phase, side === "ours" ? "ours" : "mailauth", dec(f.cpuMsPerMessage), dec(f.dnsQuestionsPerMessage), int(f.messagesPerSecond), dec(f.p50Ms), dec(f.p99Ms)]] : [];
        }),
      ),
    ),
    "",
    "DKIM body hash alone (mailauth's dkimVerify, key cached):",
    "",
    markdownTable(
      ["body", "canonicalization", "CPU ms/msg", "MB/s"],
      record.bodyHash.map((b) => [`${int(b.bytes / 1024)} KB`, b.canonicalization, dec(b.msPerMessage), dec(b.mbPerSecond)]),
    ),
  ].join("\n");
}

/** Per benchmark (the name its records carry), its figures as Markdown. */
export const FIGURES = {
  cli: cliFigures,
  api: apiFigures,
  validate: validateFigures,
  inbound: inboundFigures,
  outbound: outboundFigures,
  faults: faultsFigures,
  roles: rolesFigures,
  authentication: authenticationFigures,
} as const satisfies Record<string, (record: never) => string>;

export type BenchName = keyof typeof FIGURES;
