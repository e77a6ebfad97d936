// The outbound benchmark's load generator, run as a child process (its event loop shares nothing with what it
// measures):
//
//   node --import tsx bench/outbound-client.ts '<json OutboundJob>'
//
// It submits messages either through our JSON API (POST /v1/inboxes/{inboxId}/messages, a fresh idempotency key
// each, keep-alive connections) or to Postfix over SMTP (one transaction per message on persistent sessions,
// MAIL/RCPT/DATA pipelined when offered), and prints one JSON line with a record per message when done:
// when it was due, when the request (or MAIL FROM) was written, when the 202 (or the 250 after DATA) came back,
// and what identifies the message at the sink (Message-ID; the token is also in the Subject).
//
//   closed  `concurrency` clients, each sending its next message as soon as the last one is answered
//   open    open loop: messages fall due at `rate` per second, evenly spaced; at most `concurrency` are in flight,
//           a message due while all are busy waits (its wait shows as start − due)
//
// Every loop stops by itself: after `durationS` or `count` messages, whichever first (or a line on stdin), then at
// most DRAIN_LIMIT_MS for the answers still out. runOutboundClient() runs it from a benchmark.
import { spawn } from "node:child_process";
import { Agent, request } from "node:http";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { now, ReplyError, SmtpSession } from "./smtp-session.js";
import { runAsScript } from "./machine.js";

export interface OutboundJob {
  readonly target: "api" | "smtp";
  readonly mode: "open" | "closed";
  readonly concurrency: number;
  readonly rate?: number;
  readonly durationS: number;
  readonly count?: number;
  /** Run tag: tokens are `<tag>.<n>`, idempotency keys `bench-<tag>-<n>`. */
  readonly tag: string;
  /** Recipient domain (routed to the sink). */
  readonly sinkDomain: string;
  /** Every n-th message (n ≥ 1) goes to a `defer-` recipient the sink answers 451 first; 0 for none. */
  readonly deferEvery: number;
  /** Plain-text body size in bytes. */
  readonly textBytes: number;
  // api
  readonly apiUrl?: string;
  readonly apiKey?: string;
  readonly inboxIds?: readonly string[];
  // smtp
  readonly host?: string;
  readonly port?: number;
  readonly from?: string;
}

export interface SendRecord {
  readonly n: number;
  readonly token: string;
  readonly to: string;
  readonly deferred: boolean;
  /** Epoch ms, high resolution. */
  readonly dueAt: number;
  readonly startAt: number;
  /** When the 202 (API) or the 250 after DATA (SMTP) arrived; null when the message was not accepted. */
  readonly acceptedAt: number | null;
  /** The Message-ID the sink will see (ours: message.internetMessageId of the 202). */
  readonly messageId: string | null;
  readonly submissionId: string | null;
  /** HTTP status or SMTP reply code of a refusal, or "error: …". */
  readonly failure: string | null;
}

export interface OutboundResult {
  readonly startedAt: number;
  readonly elapsedS: number;
  readonly records: readonly SendRecord[];
  /** Messages due but never started because every slot stayed busy until the drain limit. */
  readonly notStarted: number;
}

const REPLY_TIMEOUT_MS = 30_000;
const DRAIN_LIMIT_MS = 60_000;
/** How long the warm-up waits for a service that is not serving yet. */
const WARM_LIMIT_MS = 60_000;
const LINE = "The quick brown fox jumps over the lazy dog, once more, so that the benchmark message has a body.";

export function bodyText(bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    let line = `${String(i).padStart(3, "0")} ${LINE}`;
    if (size + line.length + 1 > bytes) line = "x".repeat(Math.max(0, bytes - size - 1));
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n") + "\n";
}

export function recipientFor(job: Pick<OutboundJob, "tag" | "sinkDomain" | "deferEvery">, n: number): { to: string; deferred: boolean } {
  const deferred = job.deferEvery > 0 && n % job.deferEvery === job.deferEvery - 1;
  // A deferred message gets an address of its own (the sink counts attempts per address); the others share 100.
  const local = deferred ? `defer-${job.tag.toLowerCase()}-${n}` : `rcpt-${n % 100}`;
  return { to: `${local}@${job.sinkDomain}`, deferred };
}

export const tokenFor = (tag: string, n: number) => `${tag}.${n}`;
export const subjectFor = (token: string) => `bench ${token}`;
/** The token in a subject made by subjectFor, if any. */
export const tokenInSubject = (subject: string) => /(?:^|\s)bench (\S+)$/.exec(subject)?.[1];

// -------------------------------------------------------------------------------------------------------------
// Our API

interface Attempt {
  readonly acceptedAt: number | null;
  readonly messageId: string | null;
  readonly submissionId: string | null;
  readonly failure: string | null;
}

interface Sender {
  /** Opens the connections the run will use, so that no measured message pays for a connect. */
  warm(): Promise<void>;
  send(n: number, to: string, token: string): Promise<Attempt>;
  close(): void;
}

function apiSender(job: OutboundJob): Sender {
  const url = new URL(job.apiUrl!);
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency, maxFreeSockets: job.concurrency });
  const text = bodyText(job.textBytes);
  const inboxes = job.inboxIds!;
  const send = (n: number, to: string, token: string): Promise<Attempt> =>
    new Promise((resolve) => {
      const body = JSON.stringify({ to: [{ email: to }], subject: subjectFor(token), text });
      let settled = false;
      const done = (a: Attempt) => {
        if (!settled) resolve(a);
        settled = true;
      };
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method: "POST",
          path: `/v1/inboxes/${inboxes[n % inboxes.length]}/messages`,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            "x-api-key": job.apiKey!,
            "idempotency-key": `bench-${job.tag}-${n}`,
          },
          timeout: REPLY_TIMEOUT_MS,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const at = now();
            const text = Buffer.concat(chunks).toString("utf8");
            if (res.statusCode !== 202) {
              return done({ acceptedAt: null, messageId: null, submissionId: null, failure: `${res.statusCode} ${text.slice(0, 200)}` });
            }
            try {
              const json = JSON.parse(text) as { message?: { internetMessageId?: string }; submission?: { id?: string } };
              done({ acceptedAt: at, messageId: json.message?.internetMessageId ?? null, submissionId: json.submission?.id ?? null, failure: null });
            } catch {
              done({ acceptedAt: at, messageId: null, submissionId: null, failure: null });
            }
          });
          res.on("error", (e) => done({ acceptedAt: null, messageId: null, submissionId: null, failure: `error: ${e.message}` }));
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer within ${REPLY_TIMEOUT_MS} ms`)));
      req.on("error", (e) => done({ acceptedAt: null, messageId: null, submissionId: null, failure: `error: ${e.message}` }));
      req.end(body);
    });
  // GET /v1/me on every connection at once: the agent keeps them open for the run.
  const me = () =>
    new Promise<void>((resolve, reject) => {
      const req = request({ agent, host: url.hostname, port: url.port, path: "/v1/me", headers: { "x-api-key": job.apiKey! } }, (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET /v1/me: ${res.statusCode}`))));
      });
      req.on("error", reject);
      req.end();
    });
  // A service that is restarting (a fault phase may strike while this client starts) answers 503 or refuses the
  // connection: the warm-up waits for it, as a client honouring Retry-After would, within a bound.
  const meWhenServing = async () => {
    for (const deadline = Date.now() + WARM_LIMIT_MS; ; ) {
      try {
        return await me();
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  };
  const warm = async () => {
    await Promise.all(Array.from({ length: job.concurrency }, meWhenServing));
  };
  return { warm, send, close: () => agent.destroy() };
}

// -------------------------------------------------------------------------------------------------------------
// SMTP submission (Postfix)

function smtpMessage(job: OutboundJob, to: string, token: string, messageId: string, text: string): string {
  const body = text.replace(/\n/g, "\r\n").replace(/^\./gm, "..");
  return (
    `From: Bench Agent <${job.from}>\r\n` +
    `To: <${to}>\r\n` +
    `Subject: ${subjectFor(token)}\r\n` +
    `Date: ${new Date().toUTCString().replace("GMT", "+0000")}\r\n` +
    `Message-ID: ${messageId}\r\n` +
    `MIME-Version: 1.0\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\n` +
    `Content-Transfer-Encoding: 7bit\r\n\r\n` +
    body +
    `.\r\n`
  );
}

function smtpSender(job: OutboundJob): Sender {
  const text = bodyText(job.textBytes);
  const idle: SmtpSession[] = [];
  const all = new Set<SmtpSession>();
  const acquire = async (): Promise<SmtpSession> => {
    for (let s = idle.pop(); s; s = idle.pop()) if (!s.broken) return s;
    const s = await SmtpSession.ready(job.host!, job.port!);
    all.add(s);
    return s;
  };
  const send = async (_n: number, to: string, token: string): Promise<Attempt> => {
    const messageId = `<${token}@bench.localhost>`;
    let session: SmtpSession | undefined;
    try {
      session = await acquire();
      const { okAt } = await session.transaction(job.from!, to, smtpMessage(job, to, token, messageId, text));
      idle.push(session);
      return { acceptedAt: okAt, messageId, submissionId: null, failure: null };
    } catch (e) {
      // A refusal leaves the session usable; a broken one is dropped when next acquired.
      if (session) idle.push(session);
      const failure = e instanceof ReplyError ? `${e.reply.code} ${e.reply.text}` : `error: ${(e as Error).message}`;
      return { acceptedAt: null, messageId: null, submissionId: null, failure };
    }
  };
  const warm = async () => {
    const sessions = await Promise.all(Array.from({ length: job.concurrency }, () => SmtpSession.ready(job.host!, job.port!)));
    for (const s of sessions) {
      all.add(s);
      idle.push(s);
    }
  };
  return { warm, send, close: () => all.forEach((s) => s.quit()) };
}

// -------------------------------------------------------------------------------------------------------------

/** Runs `job`; it ends early once `stopped` says so. */
export async function runJob(job: OutboundJob, stopped: () => boolean = () => false): Promise<OutboundResult> {
  const sender = job.target === "api" ? apiSender(job) : smtpSender(job);
  await sender.warm();
  const records: SendRecord[] = [];
  const maxCount = job.count ?? Number.MAX_SAFE_INTEGER;
  const durationMs = job.durationS * 1000;
  const startedAt = now();
  let notStarted = 0;

  const one = async (n: number, dueAt: number) => {
    const token = tokenFor(job.tag, n);
    const { to, deferred } = recipientFor(job, n);
    const startAt = now();
    const attempt = await sender.send(n, to, token);
    records.push({ n, token, to, deferred, dueAt, startAt, ...attempt });
  };

  if (job.mode === "closed") {
    let n = 0;
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (!stopped() && n < maxCount && now() - startedAt < durationMs) {
          const mine = n++;
          await one(mine, now());
        }
      }),
    );
  } else {
    const rate = job.rate ?? 20;
    const waiting: { n: number; dueAt: number }[] = [];
    let inFlight = 0;
    const start = (n: number, dueAt: number) => {
      inFlight++;
      void one(n, dueAt).finally(() => {
        inFlight--;
        const next = waiting.shift();
        if (next) start(next.n, next.dueAt);
      });
    };
    let n = 0;
    await new Promise<void>((resolve) => {
      const tick = () => {
        const t = now();
        while (!stopped() && n < maxCount && (n * 1000) / rate < durationMs && startedAt + (n * 1000) / rate <= t) {
          const dueAt = startedAt + (n * 1000) / rate;
          if (inFlight < job.concurrency) start(n, dueAt);
          else waiting.push({ n, dueAt });
          n++;
        }
        if (stopped() || n >= maxCount || (n * 1000) / rate >= durationMs || t - startedAt > durationMs + 1000) return resolve();
        setTimeout(tick, 1);
      };
      tick();
    });
    const drainUntil = now() + DRAIN_LIMIT_MS;
    while ((inFlight > 0 || waiting.length > 0) && now() < drainUntil) await new Promise((r) => setTimeout(r, 5));
    notStarted = waiting.splice(0).length;
  }
  sender.close();
  return { startedAt, elapsedS: (now() - startedAt) / 1000, records: records.sort((a, b) => a.n - b.n), notStarted };
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? "{}") as OutboundJob;
  // A hard stop whatever happens: the run's own length plus the drain limit and a margin.
  setTimeout(() => {
    process.stderr.write("outbound-client: hard time limit reached\n");
    process.exit(3);
  }, (job.durationS + DRAIN_LIMIT_MS / 1000 + 120) * 1000).unref();
  let stopped = false;
  createInterface({ input: process.stdin }).once("line", () => (stopped = true));
  const result = await runJob(job, () => stopped);
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}

/**
 * Runs this client as a child process with a job and returns its records; `whileRunning` is called every second
 * while it runs, and `stop` ends the run early when it resolves.
 */
export async function runOutboundClient(
  job: OutboundJob,
  whileRunning: () => Promise<void> = async () => undefined,
  stop?: Promise<unknown>,
): Promise<OutboundResult> {
  const child = spawn(process.execPath, ["--import", "tsx", resolve("bench/outbound-client.ts"), JSON.stringify(job)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  child.stdin.on("error", () => undefined); // the client may have finished before a stop is sent
  void stop?.then(() => child.stdin.end("stop\n"));
  let out = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (out += chunk));
  let exited = false;
  const code = new Promise<number | null>((r) => child.once("exit", (c) => ((exited = true), r(c))));
  while (!exited) {
    await Promise.race([sleep(1000), code]);
    if (!exited) await whileRunning();
  }
  if ((await code) !== 0 || out.trim() === "") throw new Error(`outbound-client exited with code ${await code}`);
  return JSON.parse(out.trim().split("\n").pop()!) as OutboundResult;
}

runAsScript(import.meta.url, "outbound-client", main);
