// One SMTP transaction for the open recipients of one domain, with nodemailer: the stored bytes as they are (raw,
// with our own envelope), DKIM-signed on the way out, one RCPT per recipient, STARTTLS when the peer offers it
// (opportunistic: an unverifiable certificate or a failed upgrade does not stop delivery, as RFC 7435 has it).
// Hosts are tried in order while the connection itself fails; the first SMTP conversation decides the attempt.
import net from "node:net";
import { createTransport } from "nodemailer";
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

export async function attemptSmtp(input: SmtpAttemptInput): Promise<SmtpAttemptResult> {
  const recipients = [...new Map(input.recipients.map((r) => [addressKey(r), r])).values()];
  let last: { error: SmtpError; hop: Hop } | undefined;
  for (const hop of input.hops) {
    if (last && Date.now() >= input.deadline) break;
    try {
      const info = (await send(hop, input, recipients)) as SmtpInfo;
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

function send(hop: Hop, input: SmtpAttemptInput, recipients: readonly string[]): Promise<unknown> {
  const transport = createTransport({
    host: hop.host,
    port: hop.port,
    name: input.ehloName,
    secure: false,
    // STARTTLS whenever offered; a failed upgrade continues in plaintext, an unverifiable certificate is used.
    opportunisticTLS: true,
    tls: { rejectUnauthorized: false, ...(net.isIP(hop.name) ? {} : { servername: hop.name }) },
    connectionTimeout: input.timeoutMs,
    greetingTimeout: input.timeoutMs,
    socketTimeout: input.timeoutMs,
    dnsTimeout: input.timeoutMs,
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
  });
  return transport.sendMail({
    envelope: { from: input.from, to: [...recipients] },
    raw: input.mime,
    xMailer: false,
    disableFileAccess: true,
    disableUrlAccess: true,
    ...(input.dkim ? { dkim: { domainName: input.dkim.domainName, keySelector: input.dkim.keySelector, privateKey: input.dkim.privateKey } } : {}),
  });
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
