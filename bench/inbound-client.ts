// The benchmark's own SMTP client, run as a child process (so it never shares an event loop with what it measures):
//
//   node --import tsx bench/inbound-client.ts '<json ClientJob>'
//
// It prints one JSON line with its figures on stdout when done (idle mode: a "ready" line first, then waits for a
// line on stdin). Raw sockets; MAIL/RCPT/DATA pipelined when the server offers PIPELINING, then the message and
// the final dot in one write; a message counts only when the reply to the final dot is 250. Every loop is bounded
// in count and time and ends by itself; in open and closed mode a line on stdin ends it earlier.
//
//   open    open loop: messages are due at `rate` per second (evenly spaced) for `durationS` or `count` messages,
//           each on a free session of the pool; a message due while every session is busy waits for one, and
//           its latency from when it was due is reported beside the `.`→250 latency; with `reconnect`, a session
//           the server closed (it was killed, say) is replaced as soon as a connection succeeds again
//   closed  closed loop: every session sends its next message as soon as the last one is answered
//   idle    opens `sessions` connections, EHLO on each, prints {"ready":…}, holds them until a line on stdin
//   greet   `count` connections one after the other: time from connect() to the 220 banner
//
// runInboundClient() runs it from a benchmark.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { bodyFor, headerFor, type MessageTemplate } from "./inbound-message.js";
import { now, ReplyError, SmtpSession } from "./smtp-session.js";
import { runAsScript } from "./machine.js";

export interface ClientJob {
  readonly mode: "open" | "closed" | "idle" | "greet";
  readonly host: string;
  readonly port: number;
  readonly sessions: number;
  /** open: messages per second. */
  readonly rate?: number;
  readonly durationS?: number;
  /** open/closed: stop after this many messages (whichever of count and duration comes first). */
  readonly count?: number;
  readonly from: string;
  /** Recipients, used round robin. */
  readonly recipients: readonly string[];
  readonly messageBytes: number;
  /** Message-ID tokens are `<tokenPrefix>.<n>`; without one the messages carry no Message-ID. */
  readonly tokenPrefix?: string;
  /** Report every message's token and send time (for the webhook latency). */
  readonly records?: boolean;
  /** idle: the longest the sessions are held if no line comes on stdin. */
  readonly holdS?: number;
  /** open: replace a session that breaks, trying every RECONNECT_MS until the run's drain limit. */
  readonly reconnect?: boolean;
}

export interface SendRecord {
  readonly token: string;
  /** Epoch ms (high resolution) of the write holding the final dot. */
  readonly dotAt: number;
  readonly okAt: number | null;
}

export interface ClientResult {
  readonly mode: ClientJob["mode"];
  readonly sent: number;
  readonly accepted: number;
  readonly failed: number;
  /** Reply codes of failed messages (and "error: …" for connection errors), counted. */
  readonly failures: Readonly<Record<string, number>>;
  readonly elapsedS: number;
  /** Accepted messages per second of the run, second by second. */
  readonly perSecond: readonly number[];
  /** `.`→250 of each accepted message, ms. */
  readonly dotToOkMs: readonly number[];
  /** open loop: from when the message was due to its 250, ms (includes waiting for a free session). */
  readonly dueToOkMs: readonly number[];
  /** open loop: messages that had to wait for a free session. */
  readonly waitedForSession: number;
  readonly pipelining: boolean;
  readonly records?: readonly SendRecord[];
  /** idle/greet: connections opened, and greet's connect→banner times, ms. */
  readonly connections?: number;
  readonly bannerMs?: readonly number[];
}

/** A run ends this long after its last message was due even if replies are still missing. */
const DRAIN_LIMIT_MS = 60_000;
/** Connections opened at once while setting up a pool. */
const CONNECT_CONCURRENCY = 50;
/** How often a broken session is tried again while the server is away. */
const RECONNECT_MS = 200;

async function openPool(job: ClientJob, size: number): Promise<SmtpSession[]> {
  const sessions: SmtpSession[] = [];
  let next = 0;
  const opener = async () => {
    while (next < size) {
      next++;
      sessions.push(await SmtpSession.ready(job.host, job.port));
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, size) }, opener));
  return sessions;
}

/** Messages for a run: the body is shared, the header carries the recipient and the token. */
function messageMaker(job: ClientJob) {
  const template: MessageTemplate = { from: job.from, to: job.recipients[0]!, bytes: job.messageBytes };
  const sampleHeader = headerFor(template, job.recipients[0]!, job.tokenPrefix ? `${job.tokenPrefix}.0000000` : null);
  const body = Buffer.from(bodyFor(template, Buffer.byteLength(sampleHeader)) + ".\r\n", "latin1");
  return (n: number) => {
    const to = job.recipients[n % job.recipients.length]!;
    const token = job.tokenPrefix ? `${job.tokenPrefix}.${String(n).padStart(7, "0")}` : null;
    return { to, token, bytes: Buffer.concat([Buffer.from(headerFor(template, to, token), "latin1"), body]) };
  };
}

async function runMessages(job: ClientJob): Promise<ClientResult> {
  let stoppedAt: number | null = null;
  createInterface({ input: process.stdin }).once("line", () => (stoppedAt ??= now()));
  const stopped = () => stoppedAt !== null;
  const sessions = await openPool(job, job.sessions);
  const pipelining = sessions.every((s) => s.pipelining);
  const make = messageMaker(job);
  const durationMs = (job.durationS ?? 3600) * 1000;
  const maxCount = job.count ?? Number.MAX_SAFE_INTEGER;
  const failures: Record<string, number> = {};
  const dotToOkMs: number[] = [];
  const dueToOkMs: number[] = [];
  const records: SendRecord[] = [];
  const perSecond: number[] = [];
  let sent = 0;
  let accepted = 0;
  let failed = 0;
  let waitedForSession = 0;
  const started = now();

  const send = async (session: SmtpSession, n: number, dueAt: number): Promise<void> => {
    const m = make(n);
    sent++;
    try {
      const { dotAt, okAt } = await session.transaction(job.from, m.to, m.bytes);
      accepted++;
      dotToOkMs.push(okAt - dotAt);
      dueToOkMs.push(okAt - dueAt);
      const second = Math.floor((okAt - started) / 1000);
      while (perSecond.length <= second) perSecond.push(0);
      perSecond[second]!++;
      if (job.records && m.token) records.push({ token: m.token, dotAt, okAt });
    } catch (e) {
      failed++;
      const key = e instanceof ReplyError ? String(e.reply.code) : `error: ${(e as Error).message}`;
      failures[key] = (failures[key] ?? 0) + 1;
    }
  };

  if (job.mode === "closed") {
    let n = 0;
    await Promise.all(
      sessions.map(async (session) => {
        while (!session.broken && !stopped() && n < maxCount && now() - started < durationMs) {
          const at = now();
          await send(session, n++, at);
        }
      }),
    );
  } else {
    const rate = job.rate ?? 100;
    const free = [...sessions];
    const waiting: { n: number; dueAt: number }[] = [];
    const running = new Set<Promise<void>>();
    const release = (session: SmtpSession) => {
      const queued = waiting.shift();
      if (queued) dispatch(session, queued.n, queued.dueAt);
      else free.push(session);
    };
    const dispatch = (session: SmtpSession, n: number, dueAt: number) => {
      const p: Promise<void> = send(session, n, dueAt).finally(() => {
        running.delete(p);
        if (!session.broken) release(session);
        else if (job.reconnect) reopen();
      });
      running.add(p);
    };
    // Tried until the drain limit of the run, whenever it ends.
    const reopen = (): void => {
      const p: Promise<void> = (async () => {
        while (now() < (stoppedAt ?? started + durationMs) + DRAIN_LIMIT_MS) {
          try {
            const session = await SmtpSession.ready(job.host, job.port);
            sessions.push(session);
            return release(session);
          } catch {
            await new Promise((r) => setTimeout(r, RECONNECT_MS));
          }
        }
      })().finally(() => running.delete(p));
      running.add(p);
    };
    let n = 0;
    // Messages fall due at started + n / rate; a timer wakes up every millisecond or so and sends what is due.
    await new Promise<void>((resolve) => {
      const tick = () => {
        const t = now();
        while (!stopped() && n < maxCount && started + (n * 1000) / rate <= t && (n * 1000) / rate < durationMs) {
          const dueAt = started + (n * 1000) / rate;
          const session = free.pop();
          if (session) dispatch(session, n, dueAt);
          else {
            waitedForSession++;
            waiting.push({ n, dueAt });
          }
          n++;
        }
        if (stopped() || n >= maxCount || (n * 1000) / rate >= durationMs || t - started > durationMs) return resolve();
        setTimeout(tick, 1);
      };
      tick();
    });
    const drainUntil = now() + DRAIN_LIMIT_MS;
    while ((running.size > 0 || waiting.length > 0) && now() < drainUntil) {
      await new Promise((r) => setTimeout(r, 5));
    }
    if (waiting.length > 0) {
      failed += waiting.length;
      failures["not sent: no free session before the drain limit"] = waiting.length;
    }
  }
  const elapsedS = (now() - started) / 1000;
  for (const s of sessions) s.quit();
  return {
    mode: job.mode,
    sent,
    accepted,
    failed,
    failures,
    elapsedS,
    perSecond,
    dotToOkMs,
    dueToOkMs,
    waitedForSession,
    pipelining,
    ...(job.records ? { records } : {}),
  };
}

async function runIdle(job: ClientJob): Promise<ClientResult> {
  const started = now();
  const sessions = await openPool(job, job.sessions);
  process.stdout.write(`${JSON.stringify({ ready: true, connections: sessions.length })}\n`);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, (job.holdS ?? 60) * 1000);
    createInterface({ input: process.stdin }).once("line", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  const alive = sessions.filter((s) => !s.broken).length;
  for (const s of sessions) s.quit();
  return { ...emptyResult(job, started), connections: alive };
}

async function runGreet(job: ClientJob): Promise<ClientResult> {
  const started = now();
  const bannerMs: number[] = [];
  for (let i = 0; i < (job.count ?? 50); i++) {
    const at = now();
    const { session, banner } = SmtpSession.open(job.host, job.port);
    const reply = await banner;
    bannerMs.push(now() - at);
    if (reply.code !== 220) throw new ReplyError(reply, "banner");
    session.quit();
  }
  return { ...emptyResult(job, started), connections: bannerMs.length, bannerMs };
}

function emptyResult(job: ClientJob, started: number): ClientResult {
  return {
    mode: job.mode,
    sent: 0,
    accepted: 0,
    failed: 0,
    failures: {},
    elapsedS: (now() - started) / 1000,
    perSecond: [],
    dotToOkMs: [],
    dueToOkMs: [],
    waitedForSession: 0,
    pipelining: false,
  };
}

export interface RunOptions {
  /** idle mode: called between "ready" and closing the sessions. */
  readonly whileReady?: (connections: number) => Promise<void>;
  /** open and closed mode: ends the run early when it resolves. */
  readonly stop?: Promise<unknown>;
}

/** Runs this client as a child process with a job and returns its figures. */
export async function runInboundClient(job: ClientJob, options: RunOptions = {}): Promise<ClientResult> {
  const child = spawn(process.execPath, ["--import", "tsx", resolve("bench/inbound-client.ts"), JSON.stringify(job)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines: string[] = [];
  let buffer = "";
  child.stdout.setEncoding("utf8");
  const readyWork: Promise<void>[] = [];
  child.stdin.on("error", () => undefined); // the client may have finished before a stop is sent
  void options.stop?.then(() => child.stdin.end("stop\n"));
  child.stdout.on("data", (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      const parsed = JSON.parse(line) as { ready?: boolean; connections?: number };
      if (parsed.ready) {
        readyWork.push(
          (options.whileReady ?? (async () => undefined))(parsed.connections ?? 0).finally(() => child.stdin.end("close\n")),
        );
      } else lines.push(line);
    }
  });
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  await Promise.all(readyWork);
  if (code !== 0 || lines.length === 0) throw new Error(`inbound-client (${job.mode}) exited with code ${code}`);
  return JSON.parse(lines[lines.length - 1]!) as ClientResult;
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? "{}") as ClientJob;
  // A hard stop whatever happens: the run's own length plus generous margins.
  const hardLimitMs = ((job.durationS ?? 0) + (job.holdS ?? 0) + 300) * 1000;
  setTimeout(() => {
    process.stderr.write("inbound-client: hard time limit reached\n");
    process.exit(3);
  }, hardLimitMs).unref();
  const run = job.mode === "idle" ? runIdle : job.mode === "greet" ? runGreet : runMessages;
  const result = await run(job);
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}

runAsScript(import.meta.url, "inbound-client", main);
