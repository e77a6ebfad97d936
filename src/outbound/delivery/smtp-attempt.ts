// One SMTP transaction for the open recipients of one domain, with nodemailer: the stored bytes as they are (raw,
// with our own envelope), DKIM-signed on the way out, one RCPT per recipient, STARTTLS when the peer offers it
// (opportunistic: an unverifiable certificate or a failed upgrade does not stop delivery, as RFC 7435 has it).
// Hosts are tried in order while the connection itself fails; the first SMTP conversation decides the attempt.
//
// Connections are kept per next hop and reused (SmtpConnections): a new connection with its STARTTLS handshake
// cost more than the transaction (bench:outbound: connect → final dot 10–28 ms with a new connection per message).
// They are few per hop, closed after DELIVERY_CONNECTION_IDLE_MS idle (as Postfix's connection cache), and one that
// drops is never retried by the pool itself: the attempt's verdict decides, so a message is not sent twice by it.
import { createPrivateKey, type KeyObject } from "node:crypto";
import net from "node:net";
import { createTransport, type Transporter } from "nodemailer";
import { BoundedMemo } from "../../bounded-memo.js";
import { toAsciiDomain } from "../../dns/names.js";
import type { DkimSigningKey } from "../../domains/signing-keys.js";
import { classifySmtpReply, classifyTransportFailure, type DeliveryVerdict } from "../classify-smtp-result.js";
import type { Hop } from "./next-hop.js";

export interface SmtpAttemptInput {
  readonly hops: readonly Hop[];
  /** Our EHLO name. */
  readonly ehloName: string;
  /** Connection, greeting and per-command timeout. */
  readonly timeoutMs: number;
  readonly from: string;
  readonly recipients: readonly string[];
  readonly mime: Buffer;
  readonly dkim: DkimSigningKey | undefined;
  /** No further host is tried after this time (epoch ms): the attempt must end within its activity timeout. */
  readonly deadline: number;
  /** Ends the attempt where it is (its connection closed): the activity was cancelled or ran out of time. */
  readonly signal?: AbortSignal;
}

export interface SmtpAttemptResult {
  /** The verdict of each recipient address (as given). */
  readonly verdicts: ReadonlyMap<string, DeliveryVerdict>;
  /** The host that answered, or the last one tried. */
  readonly hop: Hop | undefined;
}

/** What nodemailer's SMTP transport resolves with and rejects with (the fields we read). */
interface SmtpInfo {
  readonly accepted?: readonly unknown[];
  readonly rejected?: readonly unknown[];
  readonly rejectedErrors?: readonly SmtpError[];
  readonly response?: string;
}
interface SmtpError extends Error {
  readonly code?: string;
  readonly originalCode?: string;
  readonly responseCode?: number;
  readonly response?: string;
  readonly command?: string;
  readonly recipient?: string;
  readonly rejectedErrors?: readonly SmtpError[];
}

/** Compares addresses as SMTP servers echo them: local part case-insensitively, domain in ASCII. */
export function addressKey(address: string): string {
  const at = address.lastIndexOf("@");
  if (at < 0) return address.toLowerCase();
  const ascii = toAsciiDomain(address.slice(at + 1));
  return `${address.slice(0, at).toLowerCase()}@${ascii.ok ? ascii.domain : address.slice(at + 1).toLowerCase()}`;
}

export async function attemptSmtp(input: SmtpAttemptInput, connections: SmtpConnections): Promise<SmtpAttemptResult> {
  const recipients = [...new Map(input.recipients.map((r) => [addressKey(r), r])).values()];
  let last: { error: SmtpError; hop: Hop } | undefined;
  for (const hop of input.hops) {
    if (last && (Date.now() >= input.deadline || input.signal?.aborted)) break;
    try {
      const info = (await connections.send(hop, input, recipients)) as SmtpInfo;
      return { verdicts: fromInfo(input.recipients, info), hop };
    } catch (e) {
      const error = e as SmtpError;
      last = { error, hop };
      // Only a session that failed before a transaction may move on to the next host (RFC 5321 §5.1).
      if (!isConnectionFailure(error)) return { verdicts: fromError(input.recipients, error), hop };
    }
  }
  const verdict: DeliveryVerdict = last
    ? last.error.responseCode
      ? classifySmtpReply(last.error.responseCode, replyOf(last.error))
      : classifyTransportFailure({ ...((last.error.originalCode ?? last.error.code) ? { code: last.error.originalCode ?? last.error.code } : {}), message: `${last.hop.name}: ${last.error.message}` })
    : classifyTransportFailure({ code: "ENOHOST", message: "no host to deliver to" });
  return { verdicts: new Map(input.recipients.map((r) => [r, verdict])), hop: last?.hop };
}

/** SMTP connections kept per next hop for the process (one per worker). */
export interface SmtpConnections {
  send(hop: Hop, input: SmtpAttemptInput, recipients: readonly string[]): Promise<unknown>;
  /** Closes every connection (a transaction under way finishes first). */
  close(): void;
}

/** Connections to one hop at once; more messages wait for one of them. */
const CONNECTIONS_PER_HOP = 8;
/** Messages per connection before a fresh one is opened. */
const MESSAGES_PER_CONNECTION = 100;
/** Hops with a pool at once; the least recently used one goes first. */
const MAX_HOPS = 256;
/** Parsed signing keys kept at once (all dropped when full). */
const MAX_SIGNING_KEYS = 256;

export function createSmtpConnections(options: {
  readonly ehloName: string;
  readonly timeoutMs: number;
  /** An idle connection is closed after this long (DELIVERY_CONNECTION_IDLE_MS; Postfix keeps them 2 s). */
  readonly idleMs: number;
}): SmtpConnections {
  // A Map keeps insertion order: re-inserting on use makes its first key the least recently used.
  const pools = new Map<string, Transporter>();
  // Signing with a PEM parses it every time: four times the CPU of the signature itself (1.8 against 0.45 ms).
  const signingKeys = new BoundedMemo<string, KeyObject>(MAX_SIGNING_KEYS);
  const signingKey = (pem: string): KeyObject => signingKeys.get(pem, createPrivateKey);

  const poolFor = (hop: Hop): Transporter => {
    const key = `${hop.host}|${hop.port}|${hop.name}`;
    let pool = pools.get(key);
    if (pool) {
      pools.delete(key);
    } else {
      pool = createTransport({
        pool: true,
        maxConnections: CONNECTIONS_PER_HOP,
        maxMessages: MESSAGES_PER_CONNECTION,
        idleTimeout: options.idleMs,
        maxRequeues: 0,
        host: hop.host,
        port: hop.port,
        name: options.ehloName,
        secure: false,
        // STARTTLS whenever offered; a failed upgrade continues in plaintext, an unverifiable certificate is used.
        opportunisticTLS: true,
        tls: { rejectUnauthorized: false, ...(net.isIP(hop.name) ? {} : { servername: hop.name }) },
        connectionTimeout: options.timeoutMs,
        greetingTimeout: options.timeoutMs,
        socketTimeout: options.timeoutMs,
        dnsTimeout: options.timeoutMs,
        disableFileAccess: true,
        disableUrlAccess: true,
        logger: false,
      });
      if (pools.size >= MAX_HOPS) {
        const [oldest, evicted] = pools.entries().next().value!;
        pools.delete(oldest);
        evicted.close();
      }
    }
    pools.set(key, pool);
    return pool;
  };

  return {
    send(hop, input, recipients) {
      return poolFor(hop).sendMail({
        envelope: { from: input.from, to: [...recipients] },
        raw: input.mime,
        xMailer: false,
        disableFileAccess: true,
        disableUrlAccess: true,
        ...(input.signal ? { signal: input.signal } : {}),
        ...(input.dkim ? { dkim: { domainName: input.dkim.domainName, keySelector: input.dkim.keySelector, privateKey: signingKey(input.dkim.privateKey) } } : {}),
      });
    },
    close() {
      for (const pool of pools.values()) pool.close();
      pools.clear();
      signingKeys.clear();
    },
  };
}

/** Failed while connecting, greeting or upgrading to TLS: nothing of the transaction was answered. */
function isConnectionFailure(error: SmtpError): boolean {
  return error.command === "CONN" || error.responseCode === undefined;
}

function replyOf(error: SmtpError): string {
  return (error.response ?? error.message).trim();
}

/** A completed transaction: accepted recipients get the DATA reply, refused ones their RCPT reply. */
function fromInfo(recipients: readonly string[], info: SmtpInfo): Map<string, DeliveryVerdict> {
  const reply = (info.response ?? "250 OK").trim();
  const code = Number(/^\d{3}/.exec(reply)?.[0] ?? 250);
  const refused = new Map((info.rejectedErrors ?? []).map((e) => [addressKey(e.recipient ?? ""), e]));
  const verdicts = new Map<string, DeliveryVerdict>();
  for (const r of recipients) {
    const error = refused.get(addressKey(r));
    verdicts.set(r, error ? classifySmtpReply(error.responseCode ?? 451, replyOf(error)) : classifySmtpReply(code, reply));
  }
  return verdicts;
}

/**
 * A transaction that failed: every RCPT refused (each recipient gets its own reply), or MAIL FROM or DATA refused
 * (every recipient gets that reply; which RCPTs were accepted before is not reported by nodemailer, and a refused
 * DATA decides for all of them anyway).
 */
function fromError(recipients: readonly string[], error: SmtpError): Map<string, DeliveryVerdict> {
  const whole = classifySmtpReply(error.responseCode ?? 451, replyOf(error));
  const refused = new Map((error.rejectedErrors ?? []).map((e) => [addressKey(e.recipient ?? ""), e]));
  return new Map(
    recipients.map((r) => {
      const own = refused.get(addressKey(r));
      return [r, own ? classifySmtpReply(own.responseCode ?? 451, replyOf(own)) : whole];
    }),
  );
}
