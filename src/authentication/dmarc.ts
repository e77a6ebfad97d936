// DMARC as RFC 7489 defines it: the From domain's policy record (or its organizational domain's), and whether an
// SPF or DKIM pass is aligned with the From domain, relaxed (same organizational domain, from the Public Suffix
// List) or strict (the same name), as the record asks.
//
// mailauth has a DMARC evaluator, but it follows RFC 9989 (DMARCbis): the organizational domain comes from a DNS
// tree walk, where a parent that publishes a DMARC record without psd=y joins every name below it into one
// organization (two tenants of a shared host would align). The Public Suffix List, private suffixes included,
// keeps them apart, costs no DNS queries, and is the same organizational domain the rest of the service uses.
import type { DnsResolver } from "../dns/resolver.js";
import { organizationalDomain, sameOrganization } from "./organizational-domain.js";
import type { AuthenticationResult } from "./results.js";

export type DmarcPolicy = "none" | "quarantine" | "reject";

export interface DmarcRecord {
  readonly p: DmarcPolicy;
  /** The policy for subdomains of the domain that published it; p when absent. */
  readonly sp: DmarcPolicy | undefined;
  /** Alignment: relaxed (r) or strict (s). */
  readonly adkim: "r" | "s";
  readonly aspf: "r" | "s";
}

export interface DmarcIdentifiers {
  /** The RFC 5322 From domain: lower-case A-labels. */
  readonly fromDomain: string;
  /** The SPF result and the domain it is for (MAIL FROM, or HELO for the null reverse-path). */
  readonly spf: { readonly result: AuthenticationResult; readonly domain: string };
  /**
   * Each verified DKIM signature (its d= and result); or why the signatures were not verified: unfinished (the
   * budget ran out: one may yet pass) or refused (the message cannot be verified at a bounded cost).
   */
  readonly dkim: readonly { readonly domain: string; readonly result: AuthenticationResult }[] | "unfinished" | "refused";
}

export interface DmarcEvaluation {
  readonly result: Extract<AuthenticationResult, "pass" | "fail" | "none" | "temperror" | "permerror">;
  /** The policy the domain asks for this message: p, or sp when the record is its organizational domain's. */
  readonly policy: DmarcPolicy | null;
  /** What aligned: the SPF domain, the d= of a DKIM signature. */
  readonly aligned: { readonly spf: string | null; readonly dkim: string | null };
}

const NOT_ALIGNED = { spf: null, dkim: null } as const;

export async function evaluateDmarc(identifiers: DmarcIdentifiers, resolver: DnsResolver): Promise<DmarcEvaluation> {
  const { fromDomain } = identifiers;
  const discovery = await discoverPolicy(fromDomain, resolver);
  if (discovery.kind === "temporary") return { result: "temperror", policy: null, aligned: NOT_ALIGNED };
  if (discovery.kind === "none") return { result: "none", policy: null, aligned: NOT_ALIGNED };
  const { record, at } = discovery;
  const policy = at === fromDomain ? record.p : (record.sp ?? record.p);

  const aligns = (domain: string, mode: "r" | "s") => (mode === "s" ? domain === fromDomain : sameOrganization(domain, fromDomain));
  const spf = identifiers.spf.result === "pass" && aligns(identifiers.spf.domain, record.aspf) ? identifiers.spf.domain : null;
  const signatures = typeof identifiers.dkim === "string" ? [] : identifiers.dkim;
  const dkim = signatures.find((s) => s.result === "pass" && aligns(s.domain, record.adkim))?.domain ?? null;
  if (spf !== null || dkim !== null) return { result: "pass", policy, aligned: { spf, dkim } };

  // An aligned identifier whose check failed temporarily may pass when the sender retries: not a fail yet. Nor is
  // a message whose signatures could not be verified at all a forgery.
  const mayPass =
    (identifiers.spf.result === "temperror" && aligns(identifiers.spf.domain, record.aspf)) ||
    signatures.some((s) => s.result === "temperror" && aligns(s.domain, record.adkim)) ||
    identifiers.dkim === "unfinished";
  const result = mayPass ? "temperror" : identifiers.dkim === "refused" ? "permerror" : "fail";
  return { result, policy, aligned: NOT_ALIGNED };
}

type Discovery =
  | { readonly kind: "record"; readonly record: DmarcRecord; readonly at: string }
  | { readonly kind: "none" }
  | { readonly kind: "temporary" };

/** RFC 7489 §6.6.3: the From domain's record, else its organizational domain's. */
async function discoverPolicy(fromDomain: string, resolver: DnsResolver): Promise<Discovery> {
  const own = await recordsAt(fromDomain, resolver);
  if (own === "temporary") return { kind: "temporary" };
  if (own.length > 1) return { kind: "none" };
  if (own.length === 1) return usable(own[0]!, fromDomain);
  const organization = organizationalDomain(fromDomain);
  if (organization === null || organization === fromDomain) return { kind: "none" };
  const inherited = await recordsAt(organization, resolver);
  if (inherited === "temporary") return { kind: "temporary" };
  return inherited.length === 1 ? usable(inherited[0]!, organization) : { kind: "none" };
}

function usable(text: string, at: string): Discovery {
  const record = parseDmarcRecord(text);
  return record ? { kind: "record", record, at } : { kind: "none" };
}

// RFC 7489 §6.4: "v" first, its value exactly DMARC1.
const VERSION = /^[vV][ \t]*=[ \t]*DMARC1[ \t]*(;|$)/;

/** The TXT records at _dmarc.<domain> that are DMARC records (others are discarded, §6.6.3 step 5). */
async function recordsAt(domain: string, resolver: DnsResolver): Promise<string[] | "temporary"> {
  let answer;
  try {
    answer = await resolver.lookup(`_dmarc.${domain}`, "TXT");
  } catch {
    return []; // a name the DNS cannot carry (over 253 octets) has no record
  }
  if (answer.kind === "temporary") return "temporary";
  if (answer.kind !== "answer") return [];
  return answer.records.filter((text) => VERSION.test(text.trimStart()));
}

const POLICIES: readonly string[] = ["none", "quarantine", "reject"] satisfies DmarcPolicy[];

/**
 * A DMARC record's tags (RFC 7489 §6.3): unknown tags are ignored; a missing or invalid p, or an invalid sp, makes
 * the record p=none when rua names a reporting URI, else no record at all (§6.6.3 step 6).
 */
export function parseDmarcRecord(text: string): DmarcRecord | undefined {
  const tags = new Map<string, string>();
  for (const part of text.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim().toLowerCase();
    if (!tags.has(name)) tags.set(name, part.slice(eq + 1).trim());
  }
  const policy = (tag: string) => tags.get(tag)?.toLowerCase();
  const p = policy("p");
  const sp = policy("sp");
  const mode = (tag: string): "r" | "s" => (policy(tag) === "s" ? "s" : "r");
  if (p !== undefined && POLICIES.includes(p) && (sp === undefined || POLICIES.includes(sp))) {
    return { p: p as DmarcPolicy, sp: sp as DmarcPolicy | undefined, adkim: mode("adkim"), aspf: mode("aspf") };
  }
  const reports = (tags.get("rua") ?? "").split(",").some((uri) => /^[a-z][a-z0-9+.-]*:\S+$/i.test(uri.trim()));
  return reports ? { p: "none", sp: undefined, adkim: mode("adkim"), aspf: mode("aspf") } : undefined;
}
