// docs/benchmarks.md is what `npm run bench:page` makes of bench/results (as gen:verify holds gen/ to proto/), and
// the page generator renders each benchmark's newest record, or says that none is committed.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { ApiRecord } from "../../bench/api.js";
import type { CliRecord } from "../../bench/cli.js";
import type { FaultsRecord } from "../../bench/faults.js";
import type { LoadFigures, PhaseFigures, PhaseSettings } from "../../bench/faults-phase.js";
import type { Report as InboundReport } from "../../bench/inbound-report.js";
import type { RecordHeader } from "../../bench/machine.js";
import type { OutboundReport } from "../../bench/outbound-report.js";
import { newestRecords, PAGE, renderBenchmarksPage } from "../../bench/page.js";
import { FIGURES, markdownTable } from "../../bench/page-figures.js";
import type { RunFigures } from "../../bench/load.js";
import { summarize } from "../../bench/report.js";
import type { RolesRecord } from "../../bench/roles.js";
import type { AuthenticationRecord } from "../../bench/authentication.js";
import type { ValidateRecord } from "../../bench/validate.js";

const header = (bench: string, startedAt: string, revision = "abc1234"): RecordHeader => ({
  bench,
  revision,
  startedAt,
  finishedAt: new Date(Date.parse(startedAt) + 12 * 60_000).toISOString(),
  machine: { cores: 2, cpu: "Test CPU @ 2.0GHz", memoryGb: 8, node: "v24.21.0" },
  loadBefore: [1.25, 1, 0.5],
  loadAfter: [3.5, 2, 1],
});
const AT = "2026-11-26T10:00:00.000Z";
const fileOf = (bench: string, at = AT) => `${bench}-${at.replace(/[:.]/g, "-")}.json`;
const cpu = { machineCores: 1.9, otherCores: 0.1, groups: { server: 0.6, postgres: 0.5, loadgen: 0.1 } };

const apiRun = (requestsPerSecond: number, p99Ms: number, serverMs: number): RunFigures => ({
  requestsPerSecond,
  requests: requestsPerSecond * 10,
  p50Ms: p99Ms / 4,
  p99Ms,
  failures: 0,
  cpu,
  cpuMsPerRequest: { server: serverMs, postgres: 0.56, loadgen: 0.12 },
  loadAverage: [1, 2],
});
const apiScenario = { name: "GET /v1/me", path: "/v1/me", connections: 32, target: { p99Ms: 25, ratio: 0.7 } };
const apiRuns = {
  scenario: apiScenario,
  ours: [apiRun(1282, 74, 0.55)],
  baseline: [apiRun(1938, 71, 0.28)],
  fixedRate: { rate: 200, ours: [apiRun(200, 150, 0.68)], baseline: [apiRun(200, 140, 0.32)] },
};
const phaseSettings: PhaseSettings = { inboundRate: 100, inboundSessions: 20, messageBytes: 2048, outboundRate: 10, outboundConcurrency: 8, beforeS: 10, afterS: 20, drainS: 300 };
const load = (acknowledged: number, refused: Record<string, number> = {}): LoadFigures => ({
  sent: acknowledged + 20,
  acknowledged,
  acknowledgedAfter: acknowledged - 1000,
  refused,
  arrived: acknowledged,
  lost: 0,
  duplicated: 0,
  maxCopies: 1,
  arrivedUnacknowledged: 1,
  messageIdMismatches: 0,
  unfinished: 0,
});
const phase = (fault: string): PhaseFigures => ({ fault, downtimeS: 9.7, drainS: 30, inbound: load(3919, { "connection closed": 20 }), outbound: load(395) });
const smtpRun = <System extends string>(scenario: string, system: System, figures: Record<string, number>) => ({
  scenario,
  system,
  run: 0,
  seconds: 60,
  cpu,
  loadBefore: [1, 1, 1],
  loadAfter: [2, 2, 2],
  failures: 0,
  error: null,
  figures,
});

/** One record of every benchmark, of the types the benchmarks write. */
const RECORDS: {
  cli: CliRecord;
  api: ApiRecord;
  validate: ValidateRecord;
  inbound: InboundReport & RecordHeader;
  outbound: OutboundReport & RecordHeader;
  faults: FaultsRecord;
  roles: RolesRecord;
  authentication: AuthenticationRecord;
} = {
  cli: {
    ...header("cli", AT),
    runs: 10,
    rows: [
      { name: "node -e 0", medianMs: 37, minMs: 29, maxMs: 54, cpuMs: 30, targetMs: null, meetsTarget: null },
      { name: "mailbox --help", medianMs: 62, minMs: 48, maxMs: 68, cpuMs: 60, targetMs: 300, meetsTarget: true },
    ],
  },
  api: {
    ...header("api", AT),
    settings: { runs: 3, durationS: 10, warmupS: 3, scenarios: [apiScenario], cpuProfile: false, fixedRate: 200 },
    keyCacheMs: 2000,
    summaries: [summarize(apiRuns)],
    runs: [apiRuns],
  },
  validate: {
    ...header("validate", AT),
    settings: { runs: 5, coldCalls: 200, warmCalls: 200, cpuProfile: false },
    addresses: 100,
    domains: 30,
    slowestAnswerMs: 30.7,
    targets: { coldP99Ms: 46.05, warmP99Ms: 20 },
    api: { cold: [{ p50: 35.6, p99: 41.1 }], warm: [{ p50: 3.6, p99: 6.8 }] },
    peer: { cold: [{ p50: 32, p99: 34.2 }], warm: [{ p50: 0.9, p99: 1.6 }] },
  },
  inbound: {
    ...header("inbound", AT),
    machine: { ...header("inbound", AT).machine, postfix: "3.7.11", haraka: "3.3.4" },
    settings: { runs: 3, sustainedS: 60, sessions: 100, messageBytes: 10_240 },
    loadAtStart: 1.4,
    roleLogLines: {},
    runs: [
      smtpRun("throughput", "ours", { msgPerS: 1041, lowest10sMsgPerS: 854, processedPerS: 179, backlogAtEnd: 17_238, drainS: 73 }),
      smtpRun("throughput", "Postfix", { msgPerS: 786, lowest10sMsgPerS: 597 }),
      smtpRun("throughput", "Haraka", { msgPerS: 571, lowest10sMsgPerS: 511 }),
    ],
  },
  outbound: {
    ...header("outbound", AT),
    machine: { ...header("outbound", AT).machine, postfix: "3.7.11" },
    settings: { runs: 3, acceptClients: 16, latencyRate: 20, deferEvery: 10, deferAttempts: 2, retryInitial: "2s", stepS: 15, textBytes: 1024, sinkGreetingMs: 0 },
    loadAtStart: 1.1,
    strays: 0,
    roleLogLines: {},
    roleLogTail: {},
    runs: [
      smtpRun("latency", "ours", { p50Ms: 25.5, p99Ms: 118, toConnectP50Ms: 23.1, sessionP50Ms: 1.2, acceptP50Ms: 11.7, acceptP99Ms: 43.3 }),
      smtpRun("latency", "Postfix", { p50Ms: 1.44, p99Ms: 13.9, toConnectP50Ms: 0.67, sessionP50Ms: 0.5, acceptP50Ms: 2.64, acceptP99Ms: 27.8 }),
    ],
  },
  faults: {
    ...header("faults", AT),
    settings: { faults: ["smtp"], phase: phaseSettings, inboxes: 20, sinkDomain: "bench-sink.test" },
    phases: [phase("kill -9 of the smtp role")],
    broken: [],
  },
  authentication: {
    ...header("authentication", AT),
    settings: { cold: 300, warm: 3000, concurrency: 32, dnsDelayMs: 0 },
    figures: {
      "ours cold": { messages: 300, cpuMsPerMessage: 2.31, dnsQuestionsPerMessage: 6, messagesPerSecond: 212, p50Ms: 4.1, p99Ms: 9.8 },
      "peer cold": { messages: 300, cpuMsPerMessage: 2.9, dnsQuestionsPerMessage: 7, messagesPerSecond: 180, p50Ms: 5, p99Ms: 11.2 },
      "ours warm": { messages: 3000, cpuMsPerMessage: 1.12, dnsQuestionsPerMessage: 0, messagesPerSecond: 850, p50Ms: 30, p99Ms: 61 },
    },
    bodyHash: [{ bytes: 10240, canonicalization: "relaxed/relaxed", msPerMessage: 0.42, mbPerSecond: 23.3 }],
  },
  roles: {
    ...header("roles", AT),
    settings: { runs: 1, seconds: 20, throughput: { ...phaseSettings, closedLoop: true }, kill: phaseSettings, inboxes: 20, sinkDomain: "bench-sink.test" },
    throughput: [1, 2].map((replicas) => ({ replicas, run: 1, inboundPerS: 419 / replicas, acceptedPerS: 15.8, deliveredPerS: 10.7, lost: 0, load: [7.8, 8.9], phase: phase("none") })),
    killPhase: phase("kill -9 of one process of each role"),
    broken: ["outbound: 1 acknowledged message(s) lost"],
  },
};

describe("docs/benchmarks.md", () => {
  test("is what npm run bench:page makes of bench/results", () => {
    expect(readFileSync(PAGE, "utf8"), "docs/benchmarks.md is not what `npm run bench:page` makes of bench/results: run it and commit the page").toBe(renderBenchmarksPage());
  });
});

describe("the benchmarks page generator", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "mailbox-bench-results-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const write = (file: string, record: object) => writeFile(join(dir, file), JSON.stringify(record));

  test("says for every benchmark that no run is committed while bench/results holds none", () => {
    const page = renderBenchmarksPage(dir);
    for (const bench of Object.keys(FIGURES)) expect(page).toContain(`No run of \`npm run bench:${bench}\` is committed yet`);
    expect(page).not.toContain("Newest run:");
  });

  test("renders each benchmark's newest record: its file, revision, machine and load, and its figures beside the peer's", async () => {
    expect(Object.keys(RECORDS).sort()).toEqual(Object.keys(FIGURES).sort());
    for (const [bench, record] of Object.entries(RECORDS)) await write(fileOf(bench), record);
    // An older record of the same benchmark is not the one shown.
    await write(fileOf("cli", "2025-01-01T00:00:00.000Z"), { ...RECORDS.cli, revision: "old0000" });
    const page = renderBenchmarksPage(dir);
    expect(page).not.toContain("is committed yet");
    expect(page).not.toContain("old0000");
    for (const bench of Object.keys(RECORDS)) expect(page).toContain(`Newest run: [${fileOf(bench)}](`);
    expect(page).toContain("at revision `abc1234`, started 2026-11-26T10:00:00.000Z (12 min); 2 × Test CPU @ 2.0GHz, 8 GB, Node v24.21.0");
    expect(page).toContain("load average (1, 5, 15 min) 1.25, 1.00, 0.50 at the start, 3.50, 2.00, 1.00 at the end");
    expect(page).toContain("| `mailbox --help` | 62 (48–68) | 60 | ≤ 300: met |");
    expect(page).toContain("| `GET /v1/me`, 32 connections | 1,282 | 74.0 | 1,938 | 71.0 | 66% | 0.55 / 0.28 | 0.68 / 0.32 | 0.56 / 0.56 |");
    expect(page).toContain("| `POST /v1/validate/bulk` (HTTP) | 35.60 | 41.10 (met) | 3.60 | 6.80 (met) |");
    expect(page).toMatch(/\| durable msg\/s, 100 sessions reused \(median of runs\) \| 1,041 \| 786 \| 571 \| ≥ 1,000 \| met \|/);
    expect(page).toMatch(/\| accepted → received p50 ms, 20 msg\/s open loop \| 25\.5 \| 1\.44 \| ≤ 150 \| met \|/);
    expect(page).toContain("| kill -9 of the smtp role | 9.7 | 3,939 | 3,919 | 2,919 | 3,919 | 0 | 0 | 1 |");
    expect(page).toContain("kill -9 of the smtp role: not acknowledged connection closed ×20");
    expect(page).toContain("| 1 of each role | 419.00 | 15.80 | 10.70 | 0 | 7.8→8.9 |");
    expect(page).toContain("| cold | ours | 2.31 | 6.00 | 212 | 4.10 | 9.80 |\n| cold | mailauth | 2.90 | 7.00 | 180 | 5.00 | 11.20 |\n| warm | ours | 1.12 | 0.00 | 850 | 30.00 | 61.00 |");
    expect(page).toContain("| 10 KB | relaxed/relaxed | 0.42 | 23.30 |");
    expect(page).toContain("**Invariants broken:**\n\n- outbound: 1 acknowledged message(s) lost");
  });

  test("refuses a record without the header every record carries, naming its file", async () => {
    const { bench: _, ...withoutBench } = RECORDS.cli;
    await write(fileOf("cli"), withoutBench);
    expect(() => newestRecords(dir)).toThrow(`bench/results/${fileOf("cli")}: no bench`);
  });

  test("refuses records of a benchmark the page has no figures for, and a text that leaves a benchmark out", async () => {
    await write(fileOf("newbench"), header("newbench", AT));
    expect(() => renderBenchmarksPage(dir)).toThrow(/records of newbench, which has no figures/);
    await rm(join(dir, fileOf("newbench")));
    expect(() => renderBenchmarksPage(dir, "# Benchmarks\n\n<!-- figures: cli -->\n")).toThrow(/must name api's figures once/);
  });

  test("escapes a | in a table cell", () => {
    expect(markdownTable(["a", "b"], [["x | y", ""]])).toBe("| a | b |\n| --- | --- |\n| x \\| y |   |");
  });
});
