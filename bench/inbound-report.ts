// The inbound benchmark's table: ours beside Postfix and Haraka, medians over runs, verdicts against the issue's
// targets, then where the CPU went and what the load average was in every run.
import { median } from "./report.js";
import { cpuTable, dec, int, ms, type BaseRunRecord, type FigureRow } from "./run-report.js";

export type SystemName = "ours" | "Postfix" | "Haraka";

export interface RunRecord extends BaseRunRecord<SystemName> {
  readonly perSecond?: readonly number[];
}

export interface Report {
  readonly startedAt: string;
  readonly revision: string;
  readonly settings: { readonly runs: number; readonly sustainedS: number; readonly sessions: number; readonly messageBytes: number };
  readonly machine: Readonly<Record<string, unknown>>;
  readonly loadAtStart: number;
  readonly roleLogLines: Readonly<Record<string, number>>;
  /** The last lines of each role's log (records before 3c5584c have none). */
  readonly roleLogTail?: Readonly<Record<string, readonly string[]>>;
  readonly runs: readonly RunRecord[];
}

const SYSTEM_ORDER: readonly SystemName[] = ["ours", "Postfix", "Haraka"];

const mb = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : "—");

type Row = FigureRow<SystemName>;

/** The main table: ours beside Postfix and Haraka (medians over runs), the issue's targets and ours' verdicts. */
export function inboundFigureRows(report: Report): { systems: SystemName[]; rows: Row[] } {
  const runsOf = (scenario: string, system: SystemName) => report.runs.filter((r) => r.scenario === scenario && r.system === system);
  const med = (scenario: string, system: SystemName, figure: string, filter = (_r: RunRecord) => true): number => {
    const values = runsOf(scenario, system).filter(filter).map((r) => r.figures[figure]).filter((v): v is number => v !== undefined);
    return values.length === 0 ? Number.NaN : median(values);
  };
  const systems = SYSTEM_ORDER.filter((s) => report.runs.some((r) => r.system === s));
  const each = (f: (s: SystemName) => string) => Object.fromEntries(systems.map((s) => [s, f(s)]));
  const oursOnly = (value: string) => Object.fromEntries(systems.map((s) => [s, s === "ours" ? value : "n/a"]));
  const valid = (scenario: string) => runsOf(scenario, "ours").length > 0 && runsOf(scenario, "ours").every((r) => r.failures === 0);
  const rows: Row[] = [];
  const { sessions } = report.settings;

  if (report.runs.some((r) => r.scenario === "throughput")) {
    const sustained = (s: SystemName) => runsOf("throughput", s).find((r) => r.run === 0);
    const oursSustained = sustained("ours");
    rows.push({
      label: `durable msg/s, ${sessions} sessions reused (median of runs)`,
      values: each((s) => int(med("throughput", s, "msgPerS"))),
      target: "≥ 1,000",
      verdict: valid("throughput") && med("throughput", "ours", "msgPerS") >= 1000,
    });
    rows.push({
      label: `  the ${report.settings.sustainedS} s run: mean msg/s`,
      values: each((s) => int(sustained(s)?.figures["msgPerS"] ?? Number.NaN)),
      target: "≥ 1,000",
      verdict: oursSustained !== undefined && oursSustained.failures === 0 && oursSustained.figures["msgPerS"]! >= 1000,
    });
    rows.push({
      label: `  the ${report.settings.sustainedS} s run: lowest 10 s window`,
      values: each((s) => int(sustained(s)?.figures["lowest10sMsgPerS"] ?? Number.NaN)),
      target: "≥ 1,000",
      verdict: oursSustained !== undefined && oursSustained.failures === 0 && oursSustained.figures["lowest10sMsgPerS"]! >= 1000,
    });
    if (systems.includes("ours")) {
      // Issue 19 item 1: stored ≥ 800 msg/s sustained, the backlog at the end ≤ 5 s of work.
      const storedPerS = med("throughput", "ours", "processedPerS");
      const drainS = oursSustained?.figures["drainS"] ?? Number.NaN;
      rows.push({
        label: "  ours: stored (commit 2) msg/s during the run",
        values: oursOnly(int(storedPerS)),
        target: "≥ 800",
        verdict: valid("throughput") && storedPerS >= 800,
      });
      rows.push({
        label: `  ours: backlog at the end of the ${report.settings.sustainedS} s run`,
        values: oursOnly(`${int(oursSustained?.figures["backlogAtEnd"] ?? Number.NaN)} (${int(drainS)} s to drain)`),
        target: "≤ 5 s",
        verdict: valid("throughput") && drainS <= 5,
      });
    }
  }
  const inFlow = runsOf("inflow", "ours");
  if (inFlow.length > 0) {
    // Issue 19 item 1 with the in-flow delay on: acceptance held to the rate storing keeps (medians over the runs;
    // records before afb816e hold one run).
    const ok = valid("inflow");
    const inFlowMed = (figure: string) => med("inflow", "ours", figure);
    const runs = inFlow.length === 1 ? `the ${report.settings.sustainedS} s run` : `${report.settings.sustainedS} s runs (median of ${inFlow.length})`;
    rows.push({ label: `with the in-flow delay, ${runs}: durable msg/s accepted`, values: oursOnly(int(inFlowMed("msgPerS"))) });
    rows.push({ label: "  ours: stored (commit 2) msg/s during the run", values: oursOnly(int(inFlowMed("processedPerS"))), target: "≥ 800", verdict: ok && inFlowMed("processedPerS") >= 800 });
    const backlogSeconds = inFlowMed("backlogSecondsAtEnd");
    rows.push({
      // Seconds of work: the raw messages left at the rate the run stored (the drain's time counts webhooks too).
      label: "  ours: backlog at the end, messages (s of work; s to drain)",
      values: oursOnly(`${int(inFlowMed("backlogMessagesAtEnd"))} (${dec(backlogSeconds)}; ${int(inFlowMed("drainS"))})`),
      target: "≤ 5 s",
      verdict: ok && !Number.isNaN(backlogSeconds) && backlogSeconds <= 5,
    });
    if (inFlow.some((r) => r.figures["walKbPerMessage"] !== undefined)) {
      rows.push({
        label: "  ours: PostgreSQL per stored message: WAL KB (full pages), buffers backends wrote; checkpoints per run; raw table MB at the end",
        values: oursOnly(
          `${dec(inFlowMed("walKbPerMessage"))} (${dec(inFlowMed("fullPageImagesPerMessage"))}), ${dec(inFlowMed("backendWritesPerMessage"))}; ` +
            `${int(inFlowMed("checkpoints"))}; ${int(inFlowMed("rawTableMbAtEnd"))}`,
        ),
      });
    }
  }
  if (report.runs.some((r) => r.scenario === "newconn")) {
    rows.push({
      label: `new connection per message, msg/s (${sessions} sessions)`,
      values: each((s) => int(med("newconn", s, "msgPerS"))),
      target: "≥ 1,000",
      verdict: valid("newconn") && med("newconn", "ours", "msgPerS") >= 1000,
    });
    rows.push({ label: "  connect → 220 banner p50 ms", values: each((s) => ms(med("newconn", s, "greetingP50Ms"))) });
  }
  if (report.runs.some((r) => r.scenario === "latency")) {
    const rate = report.runs.find((r) => r.scenario === "latency")!.figures["offeredPerS"]!;
    rows.push({ label: `. → 250 p50 ms, open loop ${int(rate)} msg/s`, values: each((s) => ms(med("latency", s, "p50Ms"))), target: "≤ 10", verdict: valid("latency") && med("latency", "ours", "p50Ms") <= 10 });
    rows.push({ label: ". → 250 p99 ms", values: each((s) => ms(med("latency", s, "p99Ms"))), target: "≤ 50", verdict: valid("latency") && med("latency", "ours", "p99Ms") <= 50 });
    rows.push({ label: "  msg/s achieved", values: each((s) => int(med("latency", s, "msgPerS"))) });
    if (systems.includes("ours")) {
      // Issue 19: readable through the API within 200 ms (p50) and 1 s (p99) of its 250, at 500 msg/s offered.
      const stored = (q: "storedP50Ms" | "storedP99Ms") => med("latency", "ours", q);
      rows.push({ label: "  ours: 250 → stored p50 ms", values: oursOnly(ms(stored("storedP50Ms"))), target: "≤ 200", verdict: valid("latency") && stored("storedP50Ms") <= 200 });
      rows.push({ label: "  ours: 250 → stored p99 ms", values: oursOnly(ms(stored("storedP99Ms"))), target: "≤ 1,000", verdict: valid("latency") && stored("storedP99Ms") <= 1000 });
    }
  }
  const webhook = runsOf("webhook", "ours")[0];
  if (webhook) {
    rows.push({ label: `arrival → webhook p50 ms, ${int(webhook.figures["offeredPerS"]!)} msg/s`, values: oursOnly(ms(webhook.figures["okP50Ms"]!)), target: "≤ 50", verdict: webhook.failures === 0 && webhook.figures["okP50Ms"]! <= 50 });
    rows.push({ label: "arrival → webhook p99 ms", values: oursOnly(ms(webhook.figures["okP99Ms"]!)), target: "≤ 250", verdict: webhook.failures === 0 && webhook.figures["okP99Ms"]! <= 250 });
  }
  const failing = runsOf("webhook-5xx", "ours")[0];
  if (failing) {
    const pct = `${Math.round(failing.figures["failRatio"]! * 100)}%`;
    rows.push({ label: `receiver answers 503 to ${pct}: webhooks lost`, values: oursOnly(int(failing.figures["lost"]!)), target: "0", verdict: failing.figures["lost"] === 0 && failing.failures === 0 });
    rows.push({ label: "  first request p50 / p99 ms", values: oursOnly(`${ms(failing.figures["firstP50Ms"]!)} / ${ms(failing.figures["firstP99Ms"]!)}`), target: "≤ 50 / ≤ 250", verdict: failing.figures["firstP50Ms"]! <= 50 && failing.figures["firstP99Ms"]! <= 250 });
    // No target: the 10% answered 503 reach a 2xx only after the retry backoff (half the initial wait at least),
    // so this p99 is the retry schedule, not the latency the target speaks of.
    rows.push({ label: "  first 2xx p50 / p99 ms (retries wait by design)", values: oursOnly(`${ms(failing.figures["okP50Ms"]!)} / ${ms(failing.figures["okP99Ms"]!)}`) });
  }
  const commits = runsOf("commits", "ours")[0];
  const commitsBare = runsOf("commits-nowebhook", "ours")[0];
  if (commits) {
    rows.push({ label: "PG commits per message (with webhook)", values: oursOnly(dec(commits.figures["commitsPerMessage"]!)), target: "≤ 2", verdict: commits.failures === 0 && commits.figures["commitsPerMessage"]! <= 2 });
    rows.push({ label: "  of which write transactions", values: oursOnly(dec(commits.figures["writeTransactionsPerMessage"]!)), target: "≤ 2", verdict: commits.figures["writeTransactionsPerMessage"]! <= 2 });
  }
  if (commitsBare) {
    rows.push({ label: "PG commits per message (no webhook endpoint)", values: oursOnly(dec(commitsBare.figures["commitsPerMessage"]!)), target: "≤ 2", verdict: commitsBare.failures === 0 && commitsBare.figures["commitsPerMessage"]! <= 2 });
    rows.push({ label: "  of which write transactions", values: oursOnly(dec(commitsBare.figures["writeTransactionsPerMessage"]!)), target: "≤ 2", verdict: commitsBare.figures["writeTransactionsPerMessage"]! <= 2 });
  }
  if (report.runs.some((r) => r.scenario === "idle")) {
    rows.push({ label: "RSS MB per 1,000 idle SMTP sessions", values: each((s) => mb(med("idle", s, "rssMbPer1000"))), target: "≤ 25", verdict: valid("idle") && med("idle", "ours", "rssMbPer1000") <= 25 });
    rows.push({ label: "  PSS MB per 1,000 (shared pages split)", values: each((s) => mb(med("idle", s, "pssMbPer1000"))) });
    if (systems.includes("Postfix")) rows.push({ label: "  (Postfix: one smtpd process per session; its RSS sum counts shared pages once per process)", values: {} });
  }
  return { systems, rows };
}

export function formatReport(report: Report): string {
  const { systems, rows } = inboundFigureRows(report);
  const width = Math.max(...rows.map((r) => r.label.length)) + 2;
  const col = 14;
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(width) : c.padStart(col))).join("");
  const out: string[] = [];
  out.push(
    `Inbound SMTP benchmark of ${report.revision}, ${report.startedAt}. ${String(report.machine["cores"])} × ${String(report.machine["cpu"])}, ` +
      `Node ${String(report.machine["node"])}, Postfix ${String(report.machine["postfix"] ?? "—")}, Haraka ${String(report.machine["haraka"] ?? "—")}.`,
    `${report.settings.runs} runs per scenario and system (medians), ${String(report.settings.messageBytes)}-byte messages; load generator ` +
      `smtp-source for throughput, bench/inbound-client.ts for latency, webhooks and idle sessions; all on the same 2 cores.`,
    `Load average when the benchmark started: ${report.loadAtStart.toFixed(2)}.`,
    "",
    line(["", ...systems, "target", "ours"]),
  );
  for (const r of rows) {
    out.push(line([r.label, ...systems.map((s) => r.values[s] ?? ""), r.target ?? "", r.verdict === undefined ? "" : r.verdict ? "PASS" : "MISS"]));
  }
  out.push("", "Where the CPU went (cores, medians over runs; other = outside the processes named), and the load average:");
  out.push(...cpuTable(report.runs, systems, 18));
  out.push("", "Per run:");
  for (const r of report.runs) {
    const f = r.figures;
    const main =
      f["msgPerS"] !== undefined && f["p99Ms"] === undefined
        ? `${int(f["msgPerS"])} msg/s over ${r.seconds.toFixed(0)} s`
        : f["p99Ms"] !== undefined
          ? `${int(f["msgPerS"]!)} msg/s, p50 ${ms(f["p50Ms"]!)} ms, p99 ${ms(f["p99Ms"])} ms, max ${ms(f["maxMs"]!)} ms`
          : Object.entries(f)
              .map(([k, v]) => `${k} ${Number.isInteger(v) ? v : v.toFixed(2)}`)
              .join(", ");
    out.push(`  ${r.scenario.padEnd(18)}${r.system.padEnd(8)}#${r.run + 1}  ${main}${r.error ? `  [${r.error}]` : ""}`);
  }
  const logLines = Object.entries(report.roleLogLines).filter(([, n]) => n > 0);
  if (logLines.length > 0) {
    out.push("", `Log lines of our roles (LOG_LEVEL error unless set): ${logLines.map(([r, n]) => `${r} ${n}`).join(", ")}`);
    for (const [role, tail] of Object.entries(report.roleLogTail ?? {})) for (const l of tail) out.push(`  ${role}: ${l.slice(0, 300)}`);
  }
  return out.join("\n");
}
