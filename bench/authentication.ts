// `npm run bench:authentication`: what the sender authentication of one inbound message costs (src/authentication/),
// on 10 KB messages with one relaxed RSA-2048 DKIM signature, SPF through an ESP's include, and a DMARC record:
//   - cold cache: every message from a domain never seen (only the ESP's shared include is ever cached), one at a
//     time, ours and the peer's in turn: latency, CPU and DNS questions per message;
//   - warm cache: one domain, many messages in flight: messages per second on one thread, CPU and DNS questions;
// each beside its peer, mailauth's own authenticate() (its DMARC tree walk, no BIMI) over the same caching resolver;
// and mailauth's DKIM body hash alone over bodies of 10 KB to 10 MB, relaxed and simple.
// CPU is this thread's (process.threadCpuUsage): the DNS server answers from a worker thread of its own.
//
//   BENCH_COLD=300 BENCH_WARM=3000 BENCH_CONCURRENCY=32  messages per phase, and in flight in the warm phase
//   BENCH_DNS_DELAY_MS=0                                 hold every DNS answer this long (a recursive resolver's miss)
import { generateKeyPairSync } from "node:crypto";
import { Worker } from "node:worker_threads";
import { authenticate, dkimSign, dkimVerify } from "mailauth";
import { mailauthResolver } from "../src/authentication/mailauth-resolver.js";
import { createSenderAuthenticator, type SmtpClient } from "../src/authentication/sender-authentication.js";
import { createCachingResolver } from "../src/dns/cache.js";
import { createResolver, type DnsResolver, type DnsServerAddress } from "../src/dns/resolver.js";
import type { BenchZone } from "./authentication-dns.js";
import { loadAverage, revision, runAsScript, startRun, type RecordHeader } from "./machine.js";
import { percentile } from "./run-report.js";
import { envNumber } from "./settings.js";

const settings = {
  cold: envNumber(process.env, "BENCH_COLD", 300, 10, 10_000),
  warm: envNumber(process.env, "BENCH_WARM", 3000, 100, 100_000),
  concurrency: envNumber(process.env, "BENCH_CONCURRENCY", 32, 1, 1000),
  dnsDelayMs: envNumber(process.env, "BENCH_DNS_DELAY_MS", 0, 0, 1000),
};
const MESSAGE_BYTES = 10 * 1024;
const CLIENT: Omit<SmtpClient, "mailFrom"> = { remoteIp: "192.0.2.25", helo: "out.esp.example" };
const log = (line: string) => process.stderr.write(`${line}\n`);

function threadCpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

/** A 10 KB newsletter-like message from `domain`, signed relaxed/relaxed by its key at s1. */
async function signedMessage(domain: string, privateKey: string, bodyBytes = MESSAGE_BYTES, canonicalization = "relaxed/relaxed"): Promise<Buffer> {
  const line = "We have updated the terms of your account; the changes take effect next month.  \r\n";
  const body = line.repeat(Math.ceil(bodyBytes / line.length)).slice(0, bodyBytes);
  const message = Buffer.from(
    `From: "Example News" <news@${domain}>\r\nTo: agent@agents.test\r\nSubject: Your account\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n` +
      `Message-ID: <${Math.random().toString(36).slice(2)}@${domain}>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}`,
  );
  const { signatures } = await dkimSign(message, { canonicalization, signatureData: [{ signingDomain: domain, selector: "s1", privateKey }] } as never);
  return Buffer.concat([Buffer.from(signatures), message]);
}

interface DnsWorker {
  readonly address: DnsServerAddress;
  questions(): Promise<number>;
  stop(): Promise<void>;
}

async function startDnsWorker(zone: BenchZone): Promise<DnsWorker> {
  const worker = new Worker(new URL("./authentication-dns.ts", import.meta.url), { workerData: zone });
  const address = await new Promise<DnsServerAddress>((resolve, reject) => {
    worker.once("message", (m: { address: DnsServerAddress }) => resolve(m.address));
    worker.once("error", reject);
  });
  return {
    address,
    questions: () =>
      new Promise((resolve) => {
        worker.once("message", resolve);
        worker.postMessage("count");
      }),
    stop: async () => {
      worker.postMessage("stop");
      await new Promise((resolve) => worker.once("exit", resolve));
    },
  };
}

interface PhaseFigures {
  readonly messages: number;
  readonly cpuMsPerMessage: number;
  readonly dnsQuestionsPerMessage: number;
  readonly messagesPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** What a run records beside its header: each phase of each side ("ours cold", "peer warm", …) and the body hash alone. */
export interface AuthenticationFigures {
  readonly settings: typeof settings;
  readonly figures: Readonly<Record<string, PhaseFigures>>;
  readonly bodyHash: readonly { bytes: number; canonicalization: string; msPerMessage: number; mbPerSecond: number }[];
}
export type AuthenticationRecord = AuthenticationFigures & RecordHeader;

/** Runs `evaluate` over the messages, `concurrency` at a time, and measures it. */
async function phase(dns: DnsWorker, messages: readonly Buffer[], concurrency: number, evaluate: (m: Buffer) => Promise<unknown>): Promise<PhaseFigures> {
  const latencies: number[] = [];
  const questionsBefore = await dns.questions();
  const cpuBefore = threadCpuMs();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, messages.length) }, async () => {
      while (next < messages.length) {
        const message = messages[next++]!;
        const t0 = performance.now();
        await evaluate(message);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  const cpuMs = threadCpuMs() - cpuBefore;
  const questions = (await dns.questions()) - questionsBefore;
  return {
    messages: messages.length,
    cpuMsPerMessage: cpuMs / messages.length,
    dnsQuestionsPerMessage: questions / messages.length,
    messagesPerSecond: messages.length / elapsedS,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

function caching(address: DnsServerAddress): DnsResolver {
  return createCachingResolver(createResolver({ servers: [address], timeoutMs: 2000 }));
}

async function main(): Promise<void> {
  const run = startRun("authentication");
  const loadBefore = run.loadBefore;
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const coldDomains = (side: string) => Array.from({ length: settings.cold }, (_, i) => `${side}${i}-cold.example`);
  const warmDomain = "warm.example";
  const domains = [...coldDomains("ours"), ...coldDomains("peer"), warmDomain];
  const dns = await startDnsWorker({ domains, publicKey: publicKey.export({ type: "spki", format: "der" }).toString("base64"), delayMs: settings.dnsDelayMs });
  log(`signing ${domains.length} messages …`);
  const cold = { ours: [] as Buffer[], peer: [] as Buffer[] };
  for (const side of ["ours", "peer"] as const) for (const d of coldDomains(side)) cold[side].push(await signedMessage(d, pem));
  const warmMessages = await Promise.all(Array.from({ length: 50 }, () => signedMessage(warmDomain, pem)));
  const warm = Array.from({ length: settings.warm }, (_, i) => warmMessages[i % warmMessages.length]!);
  const clientOf = (m: Buffer) => ({ ...CLIENT, mailFrom: `bounce@${/From: .*@([^>\r\n]+)/.exec(m.toString("latin1", 0, 2048))![1]!}` });

  const ours = (resolver: DnsResolver) => {
    const authenticator = createSenderAuthenticator({ resolver, hostname: "mx.agents.test", budgetMs: 5000 });
    return async (m: Buffer) => {
      const result = await authenticator.evaluate(m, clientOf(m));
      if (!result.senderAuthenticated || result.spf !== "pass") throw new Error(`not authenticated: ${result.summary}`);
    };
  };
  const peer = (resolver: DnsResolver) => {
    const lookups = mailauthResolver(resolver);
    return async (m: Buffer) => {
      const { mailFrom, remoteIp, helo } = clientOf(m);
      const result = await authenticate(m, { ip: remoteIp, helo, sender: mailFrom, mta: "mx.agents.test", resolver: lookups, disableBimi: true });
      if (result.dmarc === false || result.dmarc.status.result !== "pass" || !result.spf || result.spf.status.result !== "pass") throw new Error("peer: SPF or DMARC did not pass");
    };
  };

  const figures: Record<string, PhaseFigures> = {};
  // Cold: one message of each side in turn, each side with a cache of its own, so that neither pays alone for
  // what runs first in the process (the JIT of the DNS client's paths) or for the machine's load of the moment.
  const sides = { ours: ours(caching(dns.address)), peer: peer(caching(dns.address)) };
  for (const name of ["ours", "peer"] as const) for (const m of warmMessages.slice(0, 5)) await sides[name](m);
  log("cold …");
  const coldRuns = { ours: [] as { ms: number; cpuMs: number; questions: number }[], peer: [] as { ms: number; cpuMs: number; questions: number }[] };
  for (let i = 0; i < settings.cold; i++) {
    for (const name of ["ours", "peer"] as const) {
      const questions = await dns.questions();
      const cpu = threadCpuMs();
      const t0 = performance.now();
      await sides[name](cold[name][i]!);
      coldRuns[name].push({ ms: performance.now() - t0, cpuMs: threadCpuMs() - cpu, questions: (await dns.questions()) - questions });
    }
  }
  for (const name of ["ours", "peer"] as const) {
    const runs = coldRuns[name];
    const sum = (f: (r: (typeof runs)[number]) => number) => runs.reduce((total, r) => total + f(r), 0);
    figures[`${name} cold`] = {
      messages: runs.length,
      cpuMsPerMessage: sum((r) => r.cpuMs) / runs.length,
      dnsQuestionsPerMessage: sum((r) => r.questions) / runs.length,
      messagesPerSecond: runs.length / (sum((r) => r.ms) / 1000),
      p50Ms: percentile(runs.map((r) => r.ms), 50),
      p99Ms: percentile(runs.map((r) => r.ms), 99),
    };
  }
  for (const [name, side] of [["ours", ours], ["peer", peer]] as const) {
    // Warm-up of the code paths (JIT) on the warm domain, whose answers are then cached for the warm phase.
    const evaluate = side(caching(dns.address));
    for (const m of warmMessages) await evaluate(m);
    log(`${name}: warm …`);
    figures[`${name} warm`] = await phase(dns, warm, settings.concurrency, evaluate);
  }

  log("DKIM body hash …");
  const resolver = mailauthResolver(caching(dns.address));
  const bodyHash: { bytes: number; canonicalization: string; msPerMessage: number; mbPerSecond: number }[] = [];
  for (const bytes of [10 * 1024, 100 * 1024, 1024 * 1024, 10 * 1024 * 1024]) {
    for (const canonicalization of ["relaxed/relaxed", "simple/simple"]) {
      const message = await signedMessage(warmDomain, pem, bytes, canonicalization);
      const rounds = Math.max(3, Math.min(500, Math.round((20 * 1024 * 1024) / bytes)));
      await dkimVerify(message, { resolver });
      const cpuBefore = threadCpuMs();
      for (let i = 0; i < rounds; i++) await dkimVerify(message, { resolver });
      const msPerMessage = (threadCpuMs() - cpuBefore) / rounds;
      bodyHash.push({ bytes, canonicalization, msPerMessage, mbPerSecond: bytes / 1024 / 1024 / (msPerMessage / 1000) });
    }
  }
  await dns.stop();

  const n = (v: number, digits = 2) => v.toFixed(digits).padStart(9);
  const lines = [
    `sender authentication of a 10 KB message, one DKIM signature (revision ${revision()}, load average ${loadBefore[0]!.toFixed(2)} at the start, ${loadAverage()[0].toFixed(2)} at the end, DNS answers held ${settings.dnsDelayMs} ms)`,
    "",
    "phase          messages  CPU ms/msg  DNS q/msg   msg/s   p50 ms   p99 ms",
    ...Object.entries(figures).map(
      ([name, f]) =>
        `${name.padEnd(13)} ${String(f.messages).padStart(8)} ${n(f.cpuMsPerMessage, 3)}  ${n(f.dnsQuestionsPerMessage)} ${n(f.messagesPerSecond, 0)} ${n(f.p50Ms)} ${n(f.p99Ms)}`,
    ),
    "",
    "mailauth dkimVerify alone (warm key), CPU per message:",
    ...bodyHash.map((b) => `  ${(b.bytes / 1024).toString().padStart(6)} KB ${b.canonicalization.padEnd(16)} ${n(b.msPerMessage, 3)} ms ${n(b.mbPerSecond, 1)} MB/s`),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  const file = await run.write({ settings, figures, bodyHash } satisfies AuthenticationFigures);
  log(`record: ${file}`);
}

runAsScript(import.meta.url, "bench:authentication", main);
