// `npm run bench:parse`: the CPU one received message costs in the parser threads (src/mail/parse-worker.ts) before
// it is stored, by stage and for the whole job, over a mix of real shapes. No peer, no database, no network: it runs
// the real parser worker in this process and reads its thread's CPU time (worker.cpuUsage), and times extraction
// (src/extraction: reply text, codes, links and the safety analysis) and text from HTML on their own in this thread.
// CPU time, not wall time, so a busy machine changes the figures little; the median of several runs is printed.
//
// The mix: the bench:inbound message (10 KB of plain text, as bench/inbound-message.ts builds it), and every
// fixture of the extraction and safety corpora (test/fixtures/extraction, test/fixtures/safety: plain text, HTML
// newsletters, replies with quotes, codes, links, hostile mail), each composed into a MIME message (text/plain,
// text/html, or multipart/alternative) by nodemailer as a sender's client would.
//
//   npm run bench:parse [-- --runs 5 --rounds 3 --group "bench" --profile DIR --direct off]
//
// --group runs only the groups whose name starts with it ("bench", "corpus: html").
//
// --direct off: every message through mailparser, none parsed directly (src/mail/direct-parse.ts), to compare.
//
// --young 8,16,32: the bench message through one worker per young generation size (resourceLimits'
// maxYoungGenerationSizeMb, as parse.ts starts its workers), their runs alternating; prints each worker's CPU per
// message and its scavenges per 1,000 messages with their pauses (bench/gc-stats.mjs in the worker), then ends.
//
// --profile DIR writes a V8 CPU profile of the worker thread and of this thread (the extraction loop) to DIR and
// prints their self time per module (bench/cpu-profile.ts).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Worker, type ResourceLimits } from "node:worker_threads";
import { extractMessage, type ExtractionInput } from "../src/extraction/index.js";
import type { FromParseWorker, ParsedMessage, ParseWorkerSettings, ToParseWorker } from "../src/mail/parse.js";
import { corpusMessages } from "./corpus-messages.js";
import { summarizeCpuProfile } from "./cpu-profile.js";
import { bodyFor, headerFor } from "./inbound-message.js";

const { values: args } = parseArgs({
  options: {
    runs: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
    profile: { type: "string" },
    group: { type: "string" },
    direct: { type: "string", default: "on" },
    young: { type: "string" },
  },
});
const RUNS = Number(args.runs);
const ROUNDS = Number(args.rounds);
const MIN_JOBS = 300;

interface Sample {
  readonly group: string;
  readonly raw: Buffer;
}

async function mix(): Promise<Sample[]> {
  const template = { from: "bench@sender.localhost", to: "agent@mailbox.localhost", bytes: 10 * 1024 };
  const header = headerFor(template, template.to, "0123456789abcdef");
  return [{ group: "bench 10 KB", raw: Buffer.from(header + bodyFor(template, Buffer.byteLength(header))) }, ...(await corpusMessages())];
}

/** A parser worker as parse.ts starts one (no heap limit unless asked: nothing here is hostile beyond the corpus). */
async function startWorker(execArgv: string[], resourceLimits: ResourceLimits = {}): Promise<Worker> {
  const workerData: ParseWorkerSettings = { maxHeaderBytes: 64 * 1024, maxMimeParts: 1000, directParse: args.direct !== "off" };
  const worker = new Worker(new URL("../src/mail/parse-worker.ts", import.meta.url), { workerData, execArgv, resourceLimits });
  await new Promise((resolve) => worker.once("message", resolve));
  return worker;
}

/** One job to its last stage; its parsed message. */
function job(worker: Worker, raw: Buffer): Promise<ParsedMessage> {
  return new Promise((resolve, reject) => {
    let parsed: ParsedMessage | null = null;
    const done = (m: ParsedMessage) => {
      worker.off("message", onMessage);
      resolve(m);
    };
    const onMessage = (reply: FromParseWorker) => {
      if (reply.kind === "parsed") {
        if (!reply.result.ok) return reject(new Error(reply.result.error));
        parsed = reply.result.value;
      } else if (reply.kind === "extracted" && parsed) {
        if (!(parsed.html !== null && !parsed.text.trim())) done(parsed);
      } else if (reply.kind === "text" && parsed) done(parsed);
    };
    worker.on("message", onMessage);
    worker.postMessage({ kind: "message", raw: new Uint8Array(raw), authentication: null } satisfies ToParseWorker);
  });
}

function extractionInput(email: ParsedMessage): ExtractionInput {
  // As parse-worker.ts builds it.
  return {
    text: email.text.trim() ? email.text : null,
    html: email.html,
    subject: email.subject,
    from: email.from?.email ?? null,
    replyTo: email.replyTo?.email ?? null,
    authentication: null,
  };
}

function cpuMicros(u: NodeJS.CpuUsage): number {
  return u.user + u.system;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

if (args.young !== undefined) {
  await compareYoungGenerations(args.young.split(",").map(Number));
  process.exit(0);
}

/** The bench message through one worker per young generation size, runs alternating (see --young). */
async function compareYoungGenerations(sizes: readonly number[]): Promise<void> {
  const [bench] = await mix();
  const gcDir = mkdtempSync(join(tmpdir(), "bench-parse-gc-"));
  process.env["BENCH_GC_DIR"] = gcDir;
  const gcStats = new URL("./gc-stats.mjs", import.meta.url).href;
  const workers = await Promise.all(sizes.map((mb) => startWorker(["--import", gcStats], { maxYoungGenerationSizeMb: mb })));
  for (const worker of workers) for (let k = 0; k < 200; k++) await job(worker, bench!.raw);
  const scavenges = () =>
    workers.map((w) => {
      const file = join(gcDir, `${process.pid}-${w.threadId}.json`);
      const { counts } = JSON.parse(readFileSync(file, "utf8")) as { counts: { scavenge: [number, number] } };
      return counts.scavenge;
    });
  // gc-stats writes its counts every 250 ms: read them once they are settled.
  const settled = async () => {
    await sleep(600);
    return scavenges();
  };
  const cpu = sizes.map(() => [] as number[]);
  const before = await settled();
  const jobs = Math.max(MIN_JOBS, ROUNDS * 100);
  for (let run = 0; run < RUNS; run++) {
    for (const [i, worker] of workers.entries()) {
      const start = await worker.cpuUsage();
      for (let k = 0; k < jobs; k++) await job(worker, bench!.raw);
      cpu[i]!.push(cpuMicros(await worker.cpuUsage(start)) / jobs);
    }
  }
  const after = await settled();
  console.log(`bench:parse --young — the bench message, ${RUNS} runs of ${jobs} per worker alternating (load average ${loadAverage()})`);
  sizes.forEach((mb, i) => {
    const count = after[i]![0] - before[i]![0];
    const pause = after[i]![1] - before[i]![1];
    const messages = RUNS * jobs;
    console.log(
      `young ${String(mb).padStart(3)} MB: job ms median ${(median(cpu[i]!) / 1000).toFixed(3)} (runs ${cpu[i]!.map((c) => (c / 1000).toFixed(3)).join(" ")}), ` +
        `scavenges ${((count * 1000) / messages).toFixed(1)} per 1,000 messages, pauses ${(pause / messages).toFixed(4)} ms per message`,
    );
  });
  await Promise.all(workers.map((w) => w.terminate()));
  rmSync(gcDir, { recursive: true, force: true });
}

const samples = (await mix()).filter((s) => args.group === undefined || s.group.startsWith(args.group));
const groups = [...new Set(samples.map((s) => s.group))];
const profileDir = args.profile;
if (profileDir) mkdirSync(profileDir, { recursive: true });
const worker = await startWorker(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []);
const inputs = new Map<Sample, ExtractionInput>();
// Warm-up: every sample once through the worker and through extraction here, so V8 has compiled what they run.
for (const s of samples) inputs.set(s, extractionInput(await job(worker, s.raw)));
for (const s of samples) extractMessage(inputs.get(s)!);

/** Per group, per run: µs of CPU per message for the whole job (worker thread) and for extraction (this thread). */
const jobRuns = new Map(groups.map((g) => [g, [] as number[]]));
const extractionRuns = new Map(groups.map((g) => [g, [] as number[]]));
const allJob: number[] = [];
const allExtraction: number[] = [];
for (let run = 0; run < RUNS; run++) {
  let totalJob = 0;
  let totalExtraction = 0;
  for (const group of groups) {
    const members = samples.filter((s) => s.group === group);
    // A small group is run more often, so that each figure is the mean of at least MIN_JOBS messages.
    const rounds = Math.max(ROUNDS, Math.ceil(MIN_JOBS / members.length));
    const before = await worker.cpuUsage();
    for (let r = 0; r < rounds; r++) for (const s of members) await job(worker, s.raw);
    const jobCpu = cpuMicros(await worker.cpuUsage(before));
    const start = process.threadCpuUsage();
    for (let r = 0; r < rounds; r++) for (const s of members) extractMessage(inputs.get(s)!);
    const extractionCpu = cpuMicros(process.threadCpuUsage(start));
    jobRuns.get(group)!.push(jobCpu / (rounds * members.length));
    extractionRuns.get(group)!.push(extractionCpu / (rounds * members.length));
    // The mix weighs each message once per round, whatever its group's rounds.
    totalJob += (jobCpu * ROUNDS) / rounds;
    totalExtraction += (extractionCpu * ROUNDS) / rounds;
  }
  allJob.push(totalJob / (ROUNDS * samples.length));
  allExtraction.push(totalExtraction / (ROUNDS * samples.length));
}
await worker.terminate();

const ms = (us: number) => (us / 1000).toFixed(3).padStart(8);
console.log(
  `bench:parse — CPU per message, median of ${RUNS} runs of ${ROUNDS} rounds, at least ${MIN_JOBS} messages a group, direct parse ${args.direct === "off" ? "off" : "on"} (load average ${loadAverage()})`,
);
console.log(`${"group".padEnd(20)} ${"messages".padStart(8)} ${"job ms".padStart(8)} ${"extract".padStart(8)} ${"rest ms".padStart(8)}`);
const row = (name: string, count: number, jobs: number[], extractions: number[]) => {
  const j = median(jobs);
  const e = median(extractions);
  console.log(`${name.padEnd(20)} ${String(count).padStart(8)} ${ms(j)} ${ms(e)} ${ms(j - e)}`);
};
for (const group of groups) row(group, samples.filter((s) => s.group === group).length, jobRuns.get(group)!, extractionRuns.get(group)!);
row("all (corpus mix)", samples.length, allJob, allExtraction);
console.log("job: the worker thread's CPU for the whole job (parse, extraction, text from HTML, messaging);");
console.log("extract: extractMessage alone, timed here on the same input; rest: job − extract (the parse, text from HTML).");

if (profileDir) {
  // The worker wrote its profile when it ended.
  for (const file of readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile"))) {
    console.log(`\n${await summarizeCpuProfile(join(profileDir, file), { top: 20 })}`);
  }
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
}
