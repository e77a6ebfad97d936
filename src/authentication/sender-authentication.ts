// Who sent an inbound message, as far as SPF (RFC 7208), DKIM (RFC 6376, RFC 8463 Ed25519), DMARC (RFC 7489) and
// ARC (RFC 8617, informational) can tell: evaluated once per message at receipt, with mailauth over the service's
// resolver, inside one time budget. evaluate() never throws: a DNS failure, a budget that runs out or a source that
// fails is a temperror; a message that cannot be evaluated at a bounded cost is a permerror; a defect here is a
// temperror whose summary says what failed.
//
// Bounds, before anything is trusted: the header section is read up to maxHeaderBytes and held; the body is never
// held whole (a message in memory is read in place, a stream passes through in chunks of 64 KiB); at most
// MAX_DKIM_SIGNATURES signatures are verified, each costing a key lookup and possibly a pass over the body; a body
// line over MAX_BODY_LINE_BYTES stops DKIM (see message-source.ts); SPF keeps RFC 7208's limits (10 lookups, 2 void
// lookups); the budget ends every DNS wait at once and stops the body stream, so the work left behind by a message
// that ran out of time drains immediately.
import net from "node:net";
import { Readable } from "node:stream";
import { arc, dkimVerify, spf, type ARCData, type DKIMResult } from "mailauth";
import type { DnsLookup, DnsResolver } from "../dns/resolver.js";
import { toAsciiDomain } from "../dns/names.js";
import type { QueryType } from "../dns/wire.js";
import { evaluateDmarc, type DmarcEvaluation, type DmarcPolicy } from "./dmarc.js";
import { addressDomains, fieldValue, headerFields, signingDomain, withoutFields, type HeaderField } from "./header-fields.js";
import { mailauthResolver, type MailauthResolver } from "./mailauth-resolver.js";
import { LineTooLong, splitHeaderSection, verifierInput, type MessageSource, type SplitMessage } from "./message-source.js";
import { sameOrganization } from "./organizational-domain.js";
import { strongest, type AuthenticationResult } from "./results.js";
import { SpfResults, type SpfCheck } from "./spf-reuse.js";

export type { AuthenticationResult } from "./results.js";
export type { DmarcPolicy } from "./dmarc.js";
export type { MessageSource } from "./message-source.js";

/** What the smtp role saw of the client that delivered the message. */
export interface SmtpClient {
  readonly remoteIp: string;
  /** The HELO/EHLO name as given. */
  readonly helo: string;
  /** The MAIL FROM address; empty for the null reverse-path. */
  readonly mailFrom: string;
}

export interface SenderAuthentication {
  readonly spf: AuthenticationResult;
  /** One word for all signatures: pass when one passed (see results.ts for the order). */
  readonly dkim: AuthenticationResult;
  readonly dmarc: AuthenticationResult;
  /** Informational: a pass says the chain of forwarders is intact, not who the author is. */
  readonly arc: AuthenticationResult;
  /** The RFC 5322 From domain, lower-case A-labels; null when From is missing, has several domains or none. */
  readonly fromDomain: string | null;
  /** DMARC passed: SPF or DKIM passed for a domain aligned with From. */
  readonly senderAuthenticated: boolean;
  /** The d= of every signature that passed, aligned or not. */
  readonly dkimDomains: readonly string[];
  /** The policy the From domain's DMARC record asks for this message; null without one. */
  readonly dmarcPolicy: DmarcPolicy | null;
  /** The sender is authenticated and a Reply-To address is outside its organizational domain. */
  readonly replyToDiverges: boolean;
  /** What was found, for the log: `spf=pass smtp.mailfrom=… dkim=pass header.d=… dmarc=pass header.from=… arc=none`. */
  readonly summary: string;
}

export interface SenderAuthenticator {
  evaluate(message: MessageSource, client: SmtpClient): Promise<SenderAuthentication>;
}

export interface SenderAuthenticatorOptions {
  /** A caching resolver (createCachingResolver over the configured one): a warm cache makes a message cost no DNS. */
  readonly resolver: DnsResolver;
  /** Our host name, in SPF's explanations and comments. */
  readonly hostname: string;
  /** All of one message's checks, DNS included (INBOUND_AUTHENTICATION_TIMEOUT_MS). */
  readonly budgetMs: number;
  /** The header section held at most (SMTP_MAX_HEADER_BYTES); a longer one is not evaluated (permerror). */
  readonly maxHeaderBytes?: number;
}

/**
 * Real mail carries one to four signatures (the author's, an ESP's, a list's, a forwarder's); each costs a key
 * lookup and possibly a hash of the whole body. OpenDKIM verifies 3 by default.
 */
export const MAX_DKIM_SIGNATURES = 5;
/** RFC 5322 §2.1.1 allows 998 characters; SMTP relays break longer lines, and with them signatures. */
export const MAX_BODY_LINE_BYTES = 64 * 1024;
const DEFAULT_MAX_HEADER_BYTES = 1024 * 1024;
/** RFC 8301 §3.2: keys under 1024 bits are not acceptable. */
const MIN_RSA_KEY_BITS = 1024;

export function createSenderAuthenticator(options: SenderAuthenticatorOptions): SenderAuthenticator {
  const maxHeaderBytes = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  // One sender through one relay asks SPF the same question message after message (spf-reuse.ts).
  const spfResults = new SpfResults();
  return {
    async evaluate(message, client) {
      const budget = new Budget();
      const timer = setTimeout(() => budget.spend(), options.budgetMs);
      const dns = budgeted(options.resolver, budget);
      const lookups = mailauthResolver(dns);
      let opened: SplitMessage | undefined;
      try {
        const spfCheck = spfResults.get(client, dns, (resolver) => checkSpf(client, mailauthResolver(resolver), options.hostname, options.budgetMs));
        const reading = splitHeaderSection(message, maxHeaderBytes).catch((error: unknown) => new Unreadable(error));
        const split = await bySignal(reading, budget);
        if (split === SPENT || split === undefined || split instanceof Unreadable) {
          const [word, problem] =
            split === undefined
              ? (["permerror", `no header section within ${maxHeaderBytes} bytes`] as const)
              : (["temperror", split === SPENT ? "not read in time" : `not read: ${split.message}`] as const);
          return assemble({ spf: await spfCheck, dkim: word, arc: word, from: { problem }, dmarc: { result: word, policy: null } });
        }
        opened = split;
        const fields = headerFields(split.header);
        const from = authorDomain(split.header, fields);
        // DMARC is evaluated last, but its record's name is known now: asked while DKIM runs, the caching resolver
        // has it (or has it in flight) by then, one round trip off a cold message's latency.
        if ("domain" in from) dns.lookup(`_dmarc.${from.domain}`, "TXT").catch(() => undefined);
        const signatures = selectSignatures(split, fields, from);
        const sealed = fields.some((f) => f.name.startsWith("arc-"));
        // Unsigned mail costs no pass over its body.
        const verification = signatures.found > 0 || sealed ? verifyDkim(signatures.message, lookups, budget) : Promise.resolve(UNSIGNED);
        const [spfResult, dkim] = await Promise.all([spfCheck, verification]);
        const arcResult = sealed ? await checkArc(dkim, lookups, dns, budget) : "none";
        const dkimWord = dkimResult(dkim, signatures.found);
        if (!("domain" in from)) return assemble({ spf: spfResult, dkim: dkimWord, arc: arcResult, from, dmarc: { result: "permerror", policy: null } });
        const dmarc = await bySignal(
          evaluateDmarc(
            { fromDomain: from.domain, spf: spfResult, dkim: dkim.kind === "verified" ? dkim.signatures : dkim.kind },
            dns,
          ),
          budget,
        );
        const replyTo = fields.filter((f) => f.name === "reply-to").flatMap((f) => addressDomains(fieldValue(split.header, f)));
        return assemble({
          spf: spfResult,
          dkim: dkimWord,
          signatures: dkim.kind === "verified" ? dkim.signatures : [],
          arc: arcResult,
          from,
          dmarc: dmarc === SPENT ? { result: "temperror", policy: null } : dmarc,
          replyTo,
        });
      } catch (error) {
        // A defect, not the sender's doing or the DNS's: the message goes on, unauthenticated, and the log says why.
        return assemble({
          spf: { result: "temperror", domain: "" },
          dkim: "temperror",
          arc: "temperror",
          from: { problem: `evaluation failed: ${(error as Error).message}` },
          dmarc: { result: "temperror", policy: null },
        });
      } finally {
        clearTimeout(timer);
        // Whatever is still running for this message (a key lookup after the budget) ends now, and a stream whose
        // body was not read (unsigned mail) is let go.
        budget.spend();
        opened?.release().catch(() => undefined);
      }
    },
  };
}

type From = { readonly domain: string } | { readonly problem: string };

/** The message's source failed while its header section was read (a database or file error). */
class Unreadable extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

/** RFC 7489 §6.6.1: one From field whose addresses share one domain, else DMARC cannot be applied. */
function authorDomain(header: Buffer, fields: readonly HeaderField[]): From {
  const froms = fields.filter((f) => f.name === "from");
  if (froms.length !== 1) return { problem: froms.length === 0 ? "no From field" : "several From fields" };
  const domains = new Set(addressDomains(fieldValue(header, froms[0]!)));
  if (domains.size === 0) return { problem: "From has no address" };
  if (domains.has(null)) return { problem: "a From address has no domain name" };
  if (domains.size > 1) return { problem: "From has several domains" };
  return { domain: [...domains][0]! };
}

/**
 * The DKIM-Signature fields to verify: all of them up to MAX_DKIM_SIGNATURES; beyond it, those whose d= shares the
 * From domain's organization first (they decide DMARC), then the topmost; the rest are taken out of the header
 * given to the verifier. Leaving a field out can only make another signature fail, never pass.
 */
function selectSignatures(split: SplitMessage, fields: readonly HeaderField[], from: From): { message: SplitMessage; found: number } {
  const signatures = fields.filter((f) => f.name === "dkim-signature");
  if (signatures.length <= MAX_DKIM_SIGNATURES) return { message: split, found: signatures.length };
  const aligned = new Set(
    signatures.filter((f) => {
      const d = signingDomain(fieldValue(split.header, f));
      return "domain" in from && d !== "" && sameOrganization(domainName(d), from.domain);
    }),
  );
  const kept = new Set([...aligned, ...signatures.filter((f) => !aligned.has(f))].slice(0, MAX_DKIM_SIGNATURES));
  const dropped = new Set(signatures.filter((f) => !kept.has(f)));
  return { message: { ...split, header: withoutFields(split.header, fields, dropped) }, found: signatures.length };
}

interface Signature {
  /** d=, lower-case A-labels. */
  readonly domain: string;
  readonly selector: string;
  readonly result: AuthenticationResult;
  readonly comment: string | undefined;
}

type DkimVerification =
  /** arc: what the ARC check needs of the verification; undefined when the message has no ARC header field. */
  | { readonly kind: "verified"; readonly signatures: readonly Signature[]; readonly arc: ARCData | undefined }
  /** The budget ran out first. */
  | { readonly kind: "unfinished" }
  /** The body cannot be verified at a bounded cost (a line over MAX_BODY_LINE_BYTES). */
  | { readonly kind: "refused"; readonly reason: string };

const UNSIGNED: DkimVerification = { kind: "verified", signatures: [], arc: undefined };

async function verifyDkim(message: SplitMessage, resolver: MailauthResolver, budget: Budget): Promise<DkimVerification> {
  let input: Readable;
  try {
    input = Readable.from(verifierInput(message, MAX_BODY_LINE_BYTES), { objectMode: false });
  } catch (error) {
    if (error instanceof LineTooLong) return { kind: "refused", reason: error.message };
    throw error;
  }
  const cancel = budget.onSpent(() => input.destroy(BUDGET_RAN_OUT));
  try {
    const verification = dkimVerify(input, { resolver, minBitLength: MIN_RSA_KEY_BITS, rejectRsaSha1: true });
    const result = await bySignal(verification, budget);
    if (result === SPENT) return { kind: "unfinished" };
    // dkimVerify keeps what the ARC check needs in a property it does not enumerate.
    const arcData = (result as unknown as { arc: ARCData }).arc;
    return { kind: "verified", signatures: result.results.filter((r) => r.signingDomain !== undefined).map(signature), arc: arcData };
  } catch (error) {
    if (error instanceof LineTooLong) return { kind: "refused", reason: error.message };
    return { kind: "unfinished" };
  } finally {
    cancel();
  }
}

/** One signature's RFC 8601 word (mailauth's lenient mode, with these departures). */
function signature(r: DKIMResult): Signature {
  const status = r.status as DKIMResult["status"] & { underSized?: number };
  let result = word(status.result);
  let comment = status.comment;
  if (result === "pass" && (status.underSized ?? 0) > 0) {
    // l= left bytes unsigned: whatever was appended there (a new MIME part) is not the signer's.
    result = "policy";
    comment = `l= leaves ${status.underSized} body bytes unsigned`;
  } else if (result === "neutral" && comment === "body hash did not verify") {
    // RFC 6376 §6.1.3: a PERMFAIL, which RFC 8601 reports as fail (mailauth's strict mode does; lenient says neutral).
    result = "fail";
  }
  return { domain: domainName(r.signingDomain ?? ""), selector: r.selector ?? "", result, comment };
}

function dkimResult(dkim: DkimVerification, found: number): AuthenticationResult {
  if (dkim.kind === "unfinished") return "temperror";
  if (dkim.kind === "refused") return "permerror";
  // Fields mailauth could not read at all (an unknown algorithm, no d=) are left out of its results: signed, not processable.
  if (dkim.signatures.length === 0) return found > 0 ? "neutral" : "none";
  return strongest(dkim.signatures.map((s) => s.result));
}

async function checkSpf(client: SmtpClient, resolver: MailauthResolver, hostname: string, budgetMs: number): Promise<SpfCheck> {
  // An address literal as HELO, as mailauth's authenticate() passes it.
  const helo = net.isIP(client.helo) ? `[${client.helo}]` : client.helo;
  try {
    // Strict: RFC 7208 as written, a syntax error anywhere in a record is a permerror (§4.6). The lenient default
    // evaluates records lazily and answers fail or neutral there: 7 of the suite's 203 cases (measured).
    const result = await spf({ ip: client.remoteIp, helo, sender: client.mailFrom, mta: hostname, resolver, maxElapsedTime: budgetMs, strict: true });
    return { result: word(result.status.result), domain: result.domain.toLowerCase() };
  } catch {
    return { result: "temperror", domain: "" };
  }
}

/**
 * ARC (RFC 8617) of the newest set; mailauth calls every failure permanent, but a chain whose key lookup or
 * ARC-Message-Signature failed temporarily may pass when retried: temperror.
 */
async function checkArc(dkim: DkimVerification, resolver: MailauthResolver, dns: Budgeted, budget: Budget): Promise<AuthenticationResult> {
  if (dkim.kind === "unfinished") return "temperror";
  if (dkim.kind === "refused") return "permerror";
  if (dkim.arc === undefined) return "none";
  const result = await bySignal(
    arc(dkim.arc, { resolver, minBitLength: MIN_RSA_KEY_BITS }).catch(() => undefined),
    budget,
  );
  if (result === SPENT) return "temperror";
  // mailauth reports every problem of a chain in its result; a throw is one it could not process at all.
  if (result === undefined) return "permerror";
  const status = word(result.status.result);
  if (status !== "fail") return status;
  const signatureResult = (dkim.arc as ARCData & { lastEntry?: { messageSignature?: DKIMResult } }).lastEntry?.messageSignature?.status.result;
  // mailauth names every permanent cause in a comment; none, with a lookup of this message failed, is a DNS failure.
  const keyLookupFailed = result.status.comment === undefined && dns.temporaryFailures > 0;
  return signatureResult === "temperror" || keyLookupFailed ? "temperror" : "fail";
}

function word(result: string): AuthenticationResult {
  switch (result) {
    case "pass":
    case "fail":
    case "softfail":
    case "neutral":
    case "none":
    case "temperror":
    case "permerror":
    case "policy":
      return result;
    case "temperr":
      return "temperror";
    default:
      return "neutral";
  }
}

/** A domain as compared and reported: lower-case A-labels without the root's dot. */
function domainName(domain: string): string {
  const ascii = toAsciiDomain(domain);
  return ascii.ok ? ascii.domain : domain.toLowerCase().replace(/\.$/, "");
}

function assemble(parts: {
  readonly spf: SpfCheck;
  readonly dkim: AuthenticationResult;
  readonly signatures?: readonly Signature[];
  readonly arc: AuthenticationResult;
  readonly from: From;
  readonly dmarc: Pick<DmarcEvaluation, "result" | "policy">;
  readonly replyTo?: readonly (string | null)[];
}): SenderAuthentication {
  const fromDomain = "domain" in parts.from ? parts.from.domain : null;
  const senderAuthenticated = parts.dmarc.result === "pass";
  const dkimDomains = [...new Set((parts.signatures ?? []).filter((s) => s.result === "pass").map((s) => s.domain))];
  // Against an authenticated From only: an unauthenticated one is already the warning, and a forger writes both.
  const replyToDiverges =
    senderAuthenticated && fromDomain !== null && (parts.replyTo ?? []).some((d) => d === null || !sameOrganization(d, fromDomain));
  const signed = parts.signatures?.length ? ` (${parts.signatures.map((s) => `${s.domain}:${s.result}`).join(" ")})` : "";
  return {
    spf: parts.spf.result,
    dkim: parts.dkim,
    dmarc: parts.dmarc.result,
    arc: parts.arc,
    fromDomain,
    senderAuthenticated,
    dkimDomains,
    dmarcPolicy: parts.dmarc.policy,
    replyToDiverges,
    summary:
      `spf=${parts.spf.result} smtp.domain=${parts.spf.domain || "-"} dkim=${parts.dkim}${signed} ` +
      `dmarc=${parts.dmarc.result}${parts.dmarc.policy ? ` policy=${parts.dmarc.policy}` : ""} header.from=${fromDomain ?? `- (${"problem" in parts.from ? parts.from.problem : ""})`} arc=${parts.arc}`,
  };
}

const SPENT = Symbol("the budget ran out");
/** What a DKIM verification's input is destroyed with when the budget runs out. */
const BUDGET_RAN_OUT = new Error("the authentication budget ran out");

/**
 * One message's time budget: what waits on it stops at once when it is spent (its timer ran out, or the evaluation
 * ended). A set of callbacks rather than an AbortController: the EventTarget's listener bookkeeping and the abort's
 * Event cost every message measurable CPU (bench:inbound-cpu's processing thread), and nothing outside this module
 * listens.
 */
class Budget {
  readonly #stops = new Set<() => void>();
  #spent = false;

  get spent(): boolean {
    return this.#spent;
  }

  /** Calls stop once, when the budget is spent; answers what cancels that. */
  onSpent(stop: () => void): () => void {
    this.#stops.add(stop);
    return () => void this.#stops.delete(stop);
  }

  spend(): void {
    if (this.#spent) return;
    this.#spent = true;
    const stops = [...this.#stops];
    this.#stops.clear();
    for (const stop of stops) stop();
  }
}

/** The promise's value, or SPENT as soon as the budget is spent (the promise's own failure is then ignored). */
function bySignal<T>(promise: Promise<T>, budget: Budget): Promise<T | typeof SPENT> {
  if (budget.spent) {
    promise.catch(() => undefined);
    return Promise.resolve(SPENT);
  }
  return new Promise((resolve, reject) => {
    const cancel = budget.onSpent(() => resolve(SPENT));
    promise.then(
      (value) => {
        cancel();
        resolve(value);
      },
      (error: unknown) => {
        cancel();
        reject(error);
      },
    );
  });
}

interface Budgeted extends DnsResolver {
  /** Lookups of this message that failed temporarily so far. */
  readonly temporaryFailures: number;
}

const BUDGET_SPENT: DnsLookup = { kind: "temporary", reason: "the authentication budget ran out" };

/** The resolver for one message: every lookup ends when the budget does, and temporary failures are counted. */
function budgeted(resolver: DnsResolver, budget: Budget): Budgeted {
  let temporaryFailures = 0;
  return {
    get temporaryFailures() {
      return temporaryFailures;
    },
    async lookup<T extends QueryType>(name: string, type: T): Promise<DnsLookup<T>> {
      const answer = await bySignal(resolver.lookup(name, type), budget);
      if (answer === SPENT || answer.kind === "temporary") temporaryFailures++;
      return (answer === SPENT ? BUDGET_SPENT : answer) as DnsLookup<T>;
    },
  };
}
