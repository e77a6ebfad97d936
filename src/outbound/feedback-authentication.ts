// Who sent a feedback report, as far as DKIM and SPF prove it (mailauth, over the service's own resolver so
// DNS_SERVERS applies), and whether that sender may complain about a recipient.
//
// The feedback address is public: anyone who received a message knows its Message-ID and the other recipients in
// its To and Cc. A report is believed about a recipient only when an authenticated identity of its sender is
//   - a feedback loop (FEEDBACK_LOOP_SENDERS, by default Yahoo's arf.mail.yahoo.com and Microsoft's
//     staff@hotmail.com): a domain (itself and its subdomains) or one address, believed about any recipient, as the
//     loops report for domains they host under other names (Yahoo's for aol.com, Microsoft's for outlook.com); or
//   - the recipient's own address: a recipient may always ask not to be mailed again.
// Sharing the recipient's domain is not enough: every gmail.com user is authenticated as gmail.com, and could then
// suppress every other gmail.com recipient of a tenant; nor is the domain of the recipient's MX hosts (outlook.com
// is both the MX of every Microsoft 365 domain and a free mailbox service).
//
// Authenticated identities are the d= of a DKIM signature that verifies, covers the whole body (no l= leaving
// bytes unsigned) and is aligned with the From domain (relaxed, as DMARC), with that From address; and the
// MAIL FROM domain and address when SPF passes for the connecting IP (the HELO name for a null MAIL FROM,
// RFC 7208 §2.4). Everything is bounded: a few DKIM signatures, one time budget for all of it; a temporary DNS
// failure is simply no identity.
import { dkimVerify, spf } from "mailauth";
import { mailauthResolver, type MailauthResolver } from "../authentication/mailauth-resolver.js";
import { organizationalDomain } from "../authentication/organizational-domain.js";
import type { SmtpClient } from "../authentication/sender-authentication.js";
import type { DnsResolver } from "../dns/resolver.js";

export { organizationalDomain };

/** The SMTP session a report arrived in (from its raw message row). */
export type ReportSession = SmtpClient;

/** Who a report is authenticated as. */
export interface ReportIdentities {
  /** Lower-case domains: DKIM d= (aligned, whole body) and the SPF-passed MAIL FROM (or HELO) domain. */
  readonly domains: readonly string[];
  /** Lower-case addresses: the From of an aligned DKIM signature, the SPF-passed MAIL FROM. */
  readonly addresses: readonly string[];
  /** What the checks found, for the log: `dkim=pass d=… spf=fail …`. */
  readonly summary: string;
}

/** A DKIM signature costs a DNS lookup; real reports carry one or two (the reporter's, an ARC hop's). */
const MAX_DKIM_SIGNATURES = 5;
/** One report's DKIM and SPF checks together, DNS included. */
const AUTHENTICATION_BUDGET_MS = 10_000;
/** Header section scanned for DKIM-Signature fields (the smtp role bounds it too: SMTP_MAX_HEADER_BYTES). */
const MAX_HEADER_SCAN = 1024 * 1024;

export interface ReportAuthenticator {
  authenticate(raw: Uint8Array, session: ReportSession): Promise<ReportIdentities>;
}

export function createReportAuthenticator(deps: { readonly resolver: DnsResolver; readonly hostname: string }): ReportAuthenticator {
  const resolver = mailauthResolver(deps.resolver);
  return {
    async authenticate(raw, session) {
      const message = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<"timeout">((resolve) => (timer = setTimeout(resolve, AUTHENTICATION_BUDGET_MS, "timeout")));
      const within = async (check: Promise<ReportIdentities>, what: string) => {
        const result = await Promise.race([check, deadline]);
        return result === "timeout" ? { ...NONE, summary: `${what}=timeout` } : result;
      };
      try {
        const parts = await Promise.all([within(checkDkim(message, resolver), "dkim"), within(checkSpf(session, resolver, deps.hostname), "spf")]);
        return {
          domains: unique(parts.flatMap((p) => p.domains)),
          addresses: unique(parts.flatMap((p) => p.addresses)),
          summary: parts.map((p) => p.summary).join(" "),
        };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

const NONE: ReportIdentities = { domains: [], addresses: [], summary: "" };

async function checkDkim(message: Buffer, resolver: MailauthResolver): Promise<ReportIdentities> {
  const signatures = countDkimSignatures(message);
  if (signatures === 0) return { ...NONE, summary: "dkim=none" };
  if (signatures > MAX_DKIM_SIGNATURES) return { ...NONE, summary: `dkim=skipped (${signatures} signatures)` };
  try {
    const result = await dkimVerify(message, { resolver });
    const domains: string[] = [];
    const addresses: string[] = [];
    const found: string[] = [];
    for (const r of result.results) {
      const d = r.signingDomain?.toLowerCase();
      // aligned: d= shares the From domain's organizational domain; underSized: body bytes an l= tag left unsigned.
      const unused = r.status.result !== "pass" ? "" : !r.status.aligned ? " (not aligned with From)" : (r.status.underSized ?? 0) > 0 ? " (l= leaves body bytes unsigned)" : "";
      found.push(`dkim=${r.status.result}${d ? ` d=${d}` : ""}${unused}`);
      if (r.status.result !== "pass" || !d || unused !== "") continue;
      domains.push(d);
      if (result.headerFrom.length === 1) addresses.push(result.headerFrom[0]!.toLowerCase());
    }
    return { domains, addresses, summary: found.join(" ") };
  } catch (error) {
    return { ...NONE, summary: `dkim=error (${(error as Error).message})` };
  }
}

async function checkSpf(session: ReportSession, resolver: MailauthResolver, hostname: string): Promise<ReportIdentities> {
  try {
    const result = await spf({
      ip: session.remoteIp,
      helo: session.helo,
      sender: session.mailFrom,
      mta: hostname,
      resolver,
      maxElapsedTime: AUTHENTICATION_BUDGET_MS,
    });
    const outcome = result.status.result;
    const domain = result.domain.toLowerCase();
    const summary = `spf=${outcome} ${session.mailFrom === "" ? "helo" : "smtp.mailfrom"}=${domain}`;
    if (outcome !== "pass") return { ...NONE, summary };
    return { domains: [domain], addresses: session.mailFrom === "" ? [] : [session.mailFrom.toLowerCase()], summary };
  } catch (error) {
    return { ...NONE, summary: `spf=error (${(error as Error).message})` };
  }
}

/** DKIM-Signature fields of the top-level header section. */
function countDkimSignatures(message: Buffer): number {
  const head = message.subarray(0, MAX_HEADER_SCAN).toString("latin1");
  const end = head.search(/\r?\n\r?\n/);
  return (end < 0 ? head : head.slice(0, end)).match(/^dkim-signature[ \t]*:/gim)?.length ?? 0;
}

/** How a report's sender may complain about a recipient: as a feedback loop, as the recipient, or not at all. */
export function vouchingFor(
  identities: ReportIdentities,
  recipient: string,
  feedbackLoopSenders: readonly string[],
): "feedback_loop" | "recipient" | undefined {
  const fbl = feedbackLoopSenders.some((entry) =>
    entry.includes("@") ? identities.addresses.includes(entry) : identities.domains.some((d) => d === entry || d.endsWith(`.${entry}`)),
  );
  if (fbl) return "feedback_loop";
  if (identities.addresses.includes(recipient.toLowerCase())) return "recipient";
  return undefined;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
