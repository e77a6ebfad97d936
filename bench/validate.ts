// `npm run bench:validate`: latency of POST /v1/validate/bulk with 100 addresses over 30 distinct domains, against
// a DNS server on loopback whose answers take 1 to 30 ms (one delay per domain), with a cold cache (every call
// names 30 domains never looked up before) and a warm one (the same 100 addresses again). Beside the API figures
// stand its peer, the validator called in-process (no HTTP, no database), and the slowest single DNS answer that
// the cold target is measured against. Loopback only; every loop is bounded.
//
//   BENCH_RUNS=5 BENCH_COLD_CALLS=200 BENCH_WARM_CALLS=200  runs, and bulk calls per run and cache state (200
//                                                           samples, so that p99 is not simply the slowest call)
//   BENCH_CPU_PROF=1                                         CPU-profile the API server and print where its time went
//   DATABASE_URL / TEMPORAL_ADDRESS                          use these instead of the embedded ones
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { issueKey } from "../src/admin/api-keys.js";
import { createOrganization } from "../src/admin/organizations.js";
import { loadConfig } from "../src/config.js";
import { migrateDatabase, openDatabase } from "../src/db/database.js";
import { createCachingResolver } from "../src/dns/cache.js";
import { createResolver } from "../src/dns/resolver.js";
import { createSuppressionLookup } from "../src/validation/suppressions.js";
import { createEmailValidator } from "../src/validation/validator.js";
import { startDnsServer, type TestDnsServer } from "../test/support/dns-server.js";
import { summarizeCpuProfile } from "./cpu-profile.js";
import { loadAverage, startRun, type RecordHeader } from "./machine.js";
import { median } from "./report.js";
import { startInfrastructure, startServer, Teardown } from "./stack.js";

const ADDRESSES = 100;
const DOMAINS = 30;
/** Domain i answers after 1 + i ms: the slowest single answer takes about 30 ms. */
const delayOf = (i: number) => 1 + i;
const TARGET = { warmP99Ms: 20, coldP99OverSlowestAnswer: 1.5 };

const int = (name: string, fallback: number, min: number, max: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}`);
  return n;
};
const settings = {
  runs: int("BENCH_RUNS", 5, 1, 20),
  coldCalls: int("BENCH_COLD_CALLS", 200, 5, 1000),
  warmCalls: int("BENCH_WARM_CALLS", 200, 10, 5000),
  cpuProfile: process.env["BENCH_CPU_PROF"] === "1",
};
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Nearest-rank percentile. */
function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

let batch = 0;
/** 30 domains never looked up before, published with their delays, and 100 addresses over them. */
function freshAddresses(dns: TestDnsServer): string[] {
  const tag = `b${(batch++).toString(36)}${randomBytes(3).toString("hex")}`;
  const domains = Array.from({ length: DOMAINS }, (_, i) => `d${i}-${tag}.example`);
  domains.forEach((d, i) => {
    dns.set(d, [{ type: "MX", preference: 10, exchange: `mx.${d}` }], 3600);
    dns.delay(d, delayOf(i));
  });
  return Array.from({ length: ADDRESSES }, (_, i) => `user${i}@${domains[i % DOMAINS]}`);
}

/** One run's bulk calls of one side and cache state, in ms. */
export interface Figures {
  readonly p50: number;
  readonly p99: number;
}

/** Each run's figures of one side. */
export interface SideFigures {
  readonly cold: Figures[];
  readonly warm: Figures[];
}

/** What bench/results/validate-<time>.json holds. */
export interface ValidateRecord extends RecordHeader {
  readonly settings: typeof settings;
  readonly addresses: number;
  readonly domains: number;
  /** The slowest single DNS answer as the resolver saw it (median of its samples), ms. */
  readonly slowestAnswerMs: number;
  /** p99 targets, ms: cold is TARGET.coldP99OverSlowestAnswer × slowestAnswerMs. */
  readonly targets: { readonly coldP99Ms: number; readonly warmP99Ms: number };
  /** POST /v1/validate/bulk over HTTP, and its peer: the validator called in-process. */
  readonly api: SideFigures;
  readonly peer: SideFigures;
}

async function measure(call: (emails: string[]) => Promise<void>, addresses: () => string[], calls: number): Promise<Figures> {
  const samples: number[] = [];
  for (let i = 0; i < calls; i++) {
    const emails = addresses();
    const started = performance.now();
    await call(emails);
    samples.push(performance.now() - started);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function main(): Promise<void> {
  const run = startRun("validate");
  const teardown = new Teardown();
  const dataDir = await mkdtemp(join(tmpdir(), "mailbox-bench-validate-"));
  teardown.add(() => rm(dataDir, { recursive: true, force: true }));
  try {
    await chmod(dataDir, 0o755);
    const dns = await startDnsServer();
    teardown.add(() => dns.stop());
    log("starting PostgreSQL and Temporal …");
    const infra = await startInfrastructure(dataDir, teardown);
    const config = loadConfig({ DATABASE_URL: infra.databaseUrl, DATA_DIR: dataDir });
    const db = await openDatabase(infra.databaseUrl, { poolMax: 2 });
    teardown.add(() => db.close());
    await migrateDatabase(db);
    const org = await createOrganization(db.fork(), config.defaults, { name: `bench-${randomBytes(4).toString("hex")}` });
    const { secret } = await issueKey(db.fork(), config.defaults, org.id, { scopes: ["validation:use"], requestsPerMinute: 10_000_000 });
    // Teardown runs newest first: this step comes after the server's stop, which writes the profile.
    if (settings.cpuProfile) teardown.add(async () => console.log(`\n${await summarizeCpuProfile(join(dataDir, "api.cpuprofile"), { work: /^node:_http_server$/, byDirectory: true })}`));
    const server = await startServer(
      "api",
      ["src/cli/mailbox.js", "serve", "--role", "api"],
      {
        DATABASE_URL: infra.databaseUrl,
        TEMPORAL_ADDRESS: infra.temporalAddress,
        HTTP_PORT: "0",
        LOG_LEVEL: "error",
        DATA_DIR: join(dataDir, "api"),
        CURSOR_SECRET: randomBytes(32).toString("base64url"),
        DNS_SERVERS: dns.serverList,
      },
      settings.cpuProfile ? ["--cpu-prof", `--cpu-prof-dir=${dataDir}`, "--cpu-prof-name=api.cpuprofile"] : [],
      teardown,
    );

    const overHttp = async (emails: string[]) => {
      const res = await fetch(`${server.url}/v1/validate/bulk`, {
        method: "POST",
        headers: { "x-api-key": secret, "content-type": "application/json" },
        body: JSON.stringify({ emails }),
      });
      const body = (await res.json()) as { results?: { result: string }[] };
      if (res.status !== 200 || body.results?.length !== ADDRESSES || body.results.some((r) => r.result !== "deliverable")) {
        throw new Error(`unexpected answer ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      }
    };
    const resolver = createResolver({ servers: [dns.address], timeoutMs: config.dnsTimeoutMs });
    const validator = createEmailValidator({ resolver: createCachingResolver(resolver), suppressions: createSuppressionLookup(db) });
    const inProcess = async (emails: string[]) => {
      const results = await validator.validate(org.id, emails);
      if (results.some((r) => r.result !== "deliverable")) throw new Error("an address was not deliverable");
    };

    const loadBefore = loadAverage()[0];
    const slowest: number[] = [];
    const api: SideFigures = { cold: [], warm: [] };
    const peer: SideFigures = { cold: [], warm: [] };
    // One call of each side first, on domains of its own: "cold" is about the DNS cache, not a process that has
    // not yet loaded or compiled the code of the path.
    await overHttp(freshAddresses(dns));
    await inProcess(freshAddresses(dns));
    for (let i = 1; i <= settings.runs; i++) {
      // The slowest single answer, as the resolver sees it: the slowest domain's delay plus the loopback trip.
      const slow = freshAddresses(dns)[DOMAINS - 1]!.split("@")[1]!;
      for (let i = 0; i < 20; i++) {
        const started = performance.now();
        await resolver.lookup(slow, "MX");
        slowest.push(performance.now() - started);
      }
      for (const [side, call] of [[api, overHttp], [peer, inProcess]] as const) {
        side.cold.push(await measure(call, () => freshAddresses(dns), settings.coldCalls));
        const warm = freshAddresses(dns);
        await call(warm);
        side.warm.push(await measure(call, () => warm, settings.warmCalls));
      }
      log(`run ${i}/${settings.runs}: api cold p99 ${api.cold.at(-1)!.p99.toFixed(1)} ms, warm p99 ${api.warm.at(-1)!.p99.toFixed(1)} ms`);
    }

    const slowestAnswer = median(slowest);
    const row = (name: string, figures: Figures[], target: string, met: (p99: number) => boolean) => {
      const p50 = median(figures.map((f) => f.p50));
      const p99 = median(figures.map((f) => f.p99));
      return `${name.padEnd(34)} ${p50.toFixed(1).padStart(8)} ${p99.toFixed(1).padStart(8)}   ${target.padEnd(16)} ${met(p99) ? "met" : "MISSED"}`;
    };
    const coldLimit = TARGET.coldP99OverSlowestAnswer * slowestAnswer;
    console.log(
      [
        `bulk validation: ${ADDRESSES} addresses over ${DOMAINS} domains, DNS answers after 1..30 ms; medians of ${settings.runs} runs`,
        `(${settings.coldCalls} cold and ${settings.warmCalls} warm calls per run); slowest single DNS answer ${slowestAnswer.toFixed(1)} ms`,
        // The machine's other work shows in the tails: on a shared 2-core machine, read p99 beside the load.
        `load average (1 min) ${loadBefore.toFixed(2)} before, ${loadAverage()[0].toFixed(2)} after`,
        "",
        `${"".padEnd(34)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}   target (p99)`,
        row("POST /v1/validate/bulk, cold", api.cold, `<= ${coldLimit.toFixed(1)} ms`, (p99) => p99 <= coldLimit),
        row("POST /v1/validate/bulk, warm", api.warm, `<= ${TARGET.warmP99Ms} ms`, (p99) => p99 <= TARGET.warmP99Ms),
        row("peer: validator in-process, cold", peer.cold, `<= ${coldLimit.toFixed(1)} ms`, (p99) => p99 <= coldLimit),
        row("peer: validator in-process, warm", peer.warm, `<= ${TARGET.warmP99Ms} ms`, (p99) => p99 <= TARGET.warmP99Ms),
      ].join("\n"),
    );
    const record: Omit<ValidateRecord, keyof RecordHeader> = {
      settings,
      addresses: ADDRESSES,
      domains: DOMAINS,
      slowestAnswerMs: slowestAnswer,
      targets: { coldP99Ms: coldLimit, warmP99Ms: TARGET.warmP99Ms },
      api,
      peer,
    };
    log(`figures written to ${await run.write(record)}`);
  } finally {
    await teardown.run();
  }
}

await main();
