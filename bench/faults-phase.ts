// One phase of the fault benchmark: inbound SMTP load and outbound API load run together against a service, a
// fault strikes (a process killed, a server restarted) and the service comes back, the load goes on for a while,
// then the phase waits until what was acknowledged is stored and delivered (or its drain limit) and counts:
//
//   inbound   acknowledged = the 250 after the final dot; arrived = a `messages` row with the message's Message-ID
//   outbound  acknowledged = the 202 of POST /v1/inboxes/{id}/messages; arrived = the final dot at the bench sink,
//             matched by the Subject's token, with the Message-ID of the 202 checked on every copy
//
// lost = acknowledged and never arrived; duplicated = copies beyond the first. A message that arrived without its
// acknowledgement (the reply died with the process) is counted apart: the sender saw a failure and would retry.
// Only the public faces are used (SMTP, HTTP, the database, the sink), so the phase runs against any deployment.
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { runInboundClient, type ClientResult } from "./inbound-client.js";
import { tokenOf } from "./inbound-message.js";
import { runOutboundClient, tokenInSubject } from "./outbound-client.js";
import type { SinkRecord } from "./outbound-sink.js";
import type { Sink } from "./outbound-sink-process.js";
import { epochNow } from "./clock.js";

/** The service under test, as the loads and the counts reach it. */
export interface FaultTarget {
  /** Every SMTP listener and API process of the deployment: the loads are spread evenly over them. */
  readonly smtpPorts: readonly number[];
  readonly apiUrls: readonly string[];
  readonly apiKey: string;
  /** Inboxes of the key's organization: inbound recipients and outbound senders. */
  readonly inboxIds: readonly string[];
  readonly addresses: readonly string[];
  /** Where outbound mail to `sinkDomain` is routed (SMTP_ROUTES). */
  readonly sink: Sink;
  readonly sinkDomain: string;
  /** The service's database URL now (an embedded one may move to another port when restarted). */
  databaseUrl(): Promise<string>;
}

export interface Fault {
  /** For the report: "kill -9 of the smtp role". */
  readonly name: string;
  /** Strikes, then brings the service back; resolves once it serves again. */
  inflict(): Promise<void>;
}

export interface PhaseSettings {
  /** Inbound messages per second (open loop), on this many SMTP sessions, of this size. */
  readonly inboundRate: number;
  readonly inboundSessions: number;
  readonly messageBytes: number;
  /** Outbound sends per second (open loop), at most this many in flight. */
  readonly outboundRate: number;
  readonly outboundConcurrency: number;
  /** Seconds of load before the fault, and after the service is back. */
  readonly beforeS: number;
  readonly afterS: number;
  /** Longest wait after the load for what was acknowledged to arrive. */
  readonly drainS: number;
  /**
   * Closed loop: every session and sender sends its next message as soon as the last one is answered (the rates are
   * then ignored): what the deployment can take, for throughput. Without a fault only.
   */
  readonly closedLoop?: boolean;
}

export interface LoadFigures {
  readonly sent: number;
  /** 250 / 202. */
  readonly acknowledged: number;
  /** Acknowledged once the fault was over: the service came back. */
  readonly acknowledgedAfter: number;
  /** Not acknowledged, by reply (SMTP code, HTTP status, or connection error). */
  readonly refused: Readonly<Record<string, number>>;
  /** Acknowledged and stored (inbound) or delivered (outbound). */
  readonly arrived: number;
  readonly lost: number;
  /** Copies beyond the first, acknowledged or not. */
  readonly duplicated: number;
  /** The most copies of one message. */
  readonly maxCopies: number;
  /** Stored or delivered though the sender saw no 250 / 202. */
  readonly arrivedUnacknowledged: number;
  /** Outbound: copies at the sink whose Message-ID is not the one the 202 named. */
  readonly messageIdMismatches: number;
  /** Outbound: acknowledged submissions not in a final state when the phase ended. */
  readonly unfinished: number;
}

export interface PhaseFigures {
  readonly fault: string;
  /** From the fault to the service serving again, seconds. */
  readonly downtimeS: number;
  readonly drainS: number;
  readonly inbound: LoadFigures;
  readonly outbound: LoadFigures;
}

/** Copies of one message allowed after one fault: the original and one resent because its outcome died with it. */
export const MAX_COPIES = 2;
const SENDER = "fault-sender@load.localhost";
const TEXT_BYTES = 1024;
const POLL_MS = 1000;
const now = epochNow;

/** Every sink record so far, by the token in its Subject; shared by the phases of a run (late copies count too). */
export class SinkLedger {
  private readonly copies = new Map<string, SinkRecord[]>();

  constructor(private readonly sink: Sink) {}

  async take(): Promise<void> {
    const { records } = await this.sink.take();
    for (const r of records) {
      const token = tokenInSubject(r.subject);
      if (token !== undefined) this.copies.set(token, [...(this.copies.get(token) ?? []), r]);
    }
  }

  of(token: string): readonly SinkRecord[] {
    return this.copies.get(token) ?? [];
  }

  tokensWithPrefix(prefix: string): string[] {
    return [...this.copies.keys()].filter((t) => t.startsWith(prefix));
  }
}

/** The invariants a phase breaks, as sentences; empty when it holds them all. */
export function brokenInvariants(phase: PhaseFigures): string[] {
  const broken: string[] = [];
  for (const [load, f] of [["inbound", phase.inbound], ["outbound", phase.outbound]] as const) {
    if (f.lost > 0) broken.push(`${load}: ${f.lost} acknowledged message(s) lost`);
    if (f.maxCopies > MAX_COPIES) broken.push(`${load}: a message arrived ${f.maxCopies} times`);
    if (f.messageIdMismatches > 0) broken.push(`${load}: ${f.messageIdMismatches} copies with another Message-ID than the 202's`);
    if (f.acknowledgedAfter === 0) broken.push(`${load}: nothing acknowledged after the fault`);
    if (f.unfinished > 0) broken.push(`${load}: ${f.unfinished} submission(s) not final after the drain`);
  }
  return broken;
}

/** Runs the loads, the fault and the drain; `tag` makes this phase's tokens its own. */
export async function runFaultPhase(
  target: FaultTarget,
  fault: Fault,
  settings: PhaseSettings,
  ledger: SinkLedger,
  tag: string,
  log: (line: string) => void,
): Promise<PhaseFigures> {
  let endLoad!: () => void;
  const loadEnded = new Promise<void>((resolve) => (endLoad = resolve));
  // Bounded by the settings; the fault's own length is not known in advance, so the loads end when told.
  const hardS = settings.beforeS + settings.afterS + 600;
  const mode = settings.closedLoop ? "closed" : "open";
  // One client per listener and per API process, each with its share of the rate and of the sessions.
  const inbound = Promise.all(
    target.smtpPorts.map((port, k) =>
      runInboundClient(
        {
          mode,
          host: "127.0.0.1",
          port,
          sessions: Math.ceil(settings.inboundSessions / target.smtpPorts.length),
          rate: settings.inboundRate / target.smtpPorts.length,
          durationS: hardS,
          from: SENDER,
          recipients: target.addresses,
          messageBytes: settings.messageBytes,
          tokenPrefix: `${tag}-in${k}`,
          records: true,
          reconnect: !settings.closedLoop,
        },
        { stop: loadEnded },
      ),
    ),
  ).then(mergeInbound);
  const outbound = Promise.all(
    target.apiUrls.map((apiUrl, k) =>
      runOutboundClient(
        {
          target: "api",
          mode,
          concurrency: Math.ceil(settings.outboundConcurrency / target.apiUrls.length),
          rate: settings.outboundRate / target.apiUrls.length,
          durationS: hardS,
          tag: `${tag}-out${k}`,
          sinkDomain: target.sinkDomain,
          deferEvery: 0,
          textBytes: TEXT_BYTES,
          apiUrl,
          apiKey: target.apiKey,
          inboxIds: target.inboxIds,
        },
        () => ledger.take(),
        loadEnded,
      ),
    ),
  ).then((results) => ({ records: results.flatMap((r) => r.records), notStarted: results.reduce((n, r) => n + r.notStarted, 0) }));
  let faultAt = 0;
  let backAt = 0;
  const struck = (async () => {
    await sleep(settings.beforeS * 1000);
    log(`${fault.name}: striking`);
    faultAt = now();
    await fault.inflict();
    backAt = now();
    log(`${fault.name}: serving again after ${((backAt - faultAt) / 1000).toFixed(1)} s`);
    await sleep(settings.afterS * 1000);
  })().finally(endLoad);
  const [inResult, outResult] = await Promise.all([inbound, outbound, struck]);

  // What was acknowledged, by token.
  const inAcked = new Map((inResult.records ?? []).map((r) => [r.token, r.okAt ?? 0]));
  const outAcked = new Map(outResult.records.filter((r) => r.acceptedAt !== null).map((r) => [r.token, r]));
  const outRefused: Record<string, number> = {};
  for (const r of outResult.records) {
    if (r.failure === null) continue;
    const reason = r.failure.startsWith("error:") ? r.failure.replace(/ \d+\.\d+\.\d+\.\d+:\d+$/, "") : r.failure.split(" ")[0]!;
    outRefused[reason] = (outRefused[reason] ?? 0) + 1;
  }
  if (outResult.notStarted > 0) outRefused["not started"] = outResult.notStarted;

  // The drain: until every acknowledged message arrived and nothing is still in progress, or the limit.
  const drainStarted = now();
  let stored = new Map<string, number>();
  let pending = Number.POSITIVE_INFINITY;
  let unfinished = outAcked.size;
  for (;;) {
    await ledger.take();
    try {
      ({ stored, pending } = await countStored(target, `${tag}-in`));
      unfinished = await countUnfinished(target, outAcked);
    } catch (e) {
      log(`counting: ${(e as Error).message}; trying again`); // the database may still be coming back
    }
    const inDone = pending === 0 && [...inAcked.keys()].every((t) => stored.has(t));
    const outDone = unfinished === 0 && [...outAcked.keys()].every((t) => ledger.of(t).length > 0);
    if ((inDone && outDone) || now() - drainStarted > settings.drainS * 1000) break;
    await sleep(POLL_MS);
  }
  const drainS = (now() - drainStarted) / 1000;

  const inTokens = new Set([...inAcked.keys(), ...stored.keys()]);
  const outTokens = new Set([...outAcked.keys(), ...ledger.tokensWithPrefix(`${tag}-out`)]);
  return {
    fault: fault.name,
    downtimeS: (backAt - faultAt) / 1000,
    drainS,
    inbound: figures({
      sent: inResult.sent,
      acknowledged: [...inAcked.keys()],
      acknowledgedAfter: [...inAcked.values()].filter((at) => at > backAt).length,
      refused: inResult.failures,
      tokens: inTokens,
      copies: (t) => stored.get(t) ?? 0,
      mismatches: () => 0,
      unfinished: 0,
    }),
    outbound: figures({
      sent: outResult.records.length + outResult.notStarted,
      acknowledged: [...outAcked.keys()],
      acknowledgedAfter: [...outAcked.values()].filter((r) => r.acceptedAt! > backAt).length,
      refused: outRefused,
      tokens: outTokens,
      copies: (t) => ledger.of(t).length,
      mismatches: (t) => ledger.of(t).filter((r) => r.messageId !== outAcked.get(t)?.messageId).length,
      unfinished,
    }),
  };
}

function figures(input: {
  sent: number;
  acknowledged: readonly string[];
  acknowledgedAfter: number;
  refused: Readonly<Record<string, number>>;
  /** Every token acknowledged or arrived. */
  tokens: ReadonlySet<string>;
  copies: (token: string) => number;
  mismatches: (token: string) => number;
  unfinished: number;
}): LoadFigures {
  const acked = new Set(input.acknowledged);
  let arrived = 0;
  let lost = 0;
  let duplicated = 0;
  let maxCopies = 0;
  let arrivedUnacknowledged = 0;
  let messageIdMismatches = 0;
  for (const token of input.tokens) {
    const copies = input.copies(token);
    maxCopies = Math.max(maxCopies, copies);
    duplicated += Math.max(0, copies - 1);
    if (acked.has(token)) {
      if (copies > 0) arrived++;
      else lost++;
      messageIdMismatches += input.mismatches(token);
    } else if (copies > 0) arrivedUnacknowledged++;
  }
  return {
    sent: input.sent,
    acknowledged: acked.size,
    acknowledgedAfter: input.acknowledgedAfter,
    refused: input.refused,
    arrived,
    lost,
    duplicated,
    maxCopies,
    arrivedUnacknowledged,
    messageIdMismatches,
    unfinished: input.unfinished,
  };
}

async function withDatabase<T>(target: FaultTarget, query: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: await target.databaseUrl(), connectionTimeoutMillis: 5000 });
  await db.connect();
  try {
    return await query(db);
  } finally {
    await db.end();
  }
}

/** The figures of the clients of one load as those of one client: records joined, failures added up. */
function mergeInbound(results: readonly ClientResult[]): Pick<ClientResult, "sent" | "failures" | "records"> {
  const failures: Record<string, number> = {};
  for (const r of results) for (const [reply, n] of Object.entries(r.failures)) failures[reply] = (failures[reply] ?? 0) + n;
  return { sent: results.reduce((n, r) => n + r.sent, 0), failures, records: results.flatMap((r) => r.records ?? []) };
}

/** Stored messages per token of this phase's inbound load, and raw messages not processed yet (any phase). */
async function countStored(target: FaultTarget, prefix: string): Promise<{ stored: Map<string, number>; pending: number }> {
  return withDatabase(target, async (db) => {
    const rows = await db.query<{ id: string; n: number }>(
      `select internet_message_id as id, count(*)::int as n from messages where internet_message_id like $1 group by 1`,
      [`<${prefix}%`],
    );
    const pending = await db.query<{ n: number }>(`select count(*)::int as n from inbound_raw_messages where status = 'pending'`);
    const stored = new Map<string, number>();
    for (const r of rows.rows) {
      const token = tokenOf(r.id);
      if (token !== undefined) stored.set(token, r.n);
    }
    return { stored, pending: pending.rows[0]!.n };
  });
}

/** Acknowledged submissions whose delivery has not reached a final state. */
async function countUnfinished(target: FaultTarget, acked: ReadonlyMap<string, { messageId: string | null }>): Promise<number> {
  const ids = [...acked.values()].map((r) => r.messageId).filter((id): id is string => id !== null);
  return withDatabase(target, async (db) => {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from submissions
       where internet_message_id = any($1::text[]) and status not in ('delivered', 'partially_delivered', 'failed')`,
      [ids],
    );
    return rows[0]!.n;
  });
}
