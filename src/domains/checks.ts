// The DNS records a customer domain publishes, and the pure checks of what DNS returned against them.
import type { DnsLookup, RecordValue } from "../dns/resolver.js";

export type Capability = "inbound" | "outbound";

/** Settings of the records every customer domain publishes. */
export interface DomainRecordSettings {
  /** Where the domain's MX records point: the inbound SMTP host. */
  readonly inboundMxHost: string;
  /** The include the suggested SPF record carries. */
  readonly spfInclude: string;
}

/** What a domain row holds that its records are made of. */
export interface DomainKeys {
  readonly domain: string;
  readonly ownershipToken: string;
  readonly dkimSelector: string;
  /** The base64 DER SubjectPublicKeyInfo: the p= tag of the DKIM record. */
  readonly dkimPublicKey: string;
}

export interface PublishedRecord {
  readonly type: "TXT" | "MX";
  readonly purpose: "ownership" | "dkim" | "mx" | "spf";
  readonly name: string;
  readonly value: string;
  readonly priority?: number;
}

const OWNERSHIP_LABEL = "_mailbox-verification";
const OWNERSHIP_PREFIX = "mailbox-verification=";
const MX_PRIORITY = 10;

export const ownershipName = (k: DomainKeys) => `${OWNERSHIP_LABEL}.${k.domain}`;
export const dkimName = (k: DomainKeys) => `${k.dkimSelector}._domainkey.${k.domain}`;

/** The records to publish, in the order a person would add them. */
export function recordsToPublish(k: DomainKeys, s: DomainRecordSettings): PublishedRecord[] {
  return [
    { type: "TXT", purpose: "ownership", name: ownershipName(k), value: `${OWNERSHIP_PREFIX}${k.ownershipToken}` },
    { type: "TXT", purpose: "dkim", name: dkimName(k), value: `v=DKIM1; k=rsa; p=${k.dkimPublicKey}` },
    { type: "MX", purpose: "mx", name: k.domain, value: s.inboundMxHost, priority: MX_PRIORITY },
    { type: "TXT", purpose: "spf", name: k.domain, value: `v=spf1 include:${s.spfInclude} ~all` },
  ];
}

export type CheckStatus = "passed" | "failed" | "temporary_error";

export interface DomainCheck {
  readonly name: "ownership" | "mx" | "dkim" | "spf";
  readonly recordName: string;
  readonly expected: string;
  readonly found: readonly string[];
  readonly status: CheckStatus;
  readonly gates: readonly Capability[];
  readonly detail: string;
}

/** The answers a verification needs, looked up in parallel. */
export interface DomainLookups {
  readonly ownership: DnsLookup<"TXT">;
  readonly mx: DnsLookup<"MX">;
  readonly dkim: DnsLookup<"TXT">;
  readonly spf: DnsLookup<"TXT">;
}

export function evaluateChecks(k: DomainKeys, s: DomainRecordSettings, l: DomainLookups): DomainCheck[] {
  const expectedOwnership = `${OWNERSHIP_PREFIX}${k.ownershipToken}`;
  const host = s.inboundMxHost.toLowerCase();
  return [
    check("ownership", ownershipName(k), expectedOwnership, ["inbound", "outbound"], l.ownership, (txt) => txt, (found) =>
      found.some((v) => v.trim() === expectedOwnership)
        ? pass("the ownership token is published")
        : fail("no TXT record at the name carries this domain's token"),
    ),
    check("mx", k.domain, `${MX_PRIORITY} ${host}`, ["inbound"], l.mx, (mx) => `${mx.preference} ${mx.exchange || "."}`, (_found, records) =>
      records.some((mx) => mx.exchange === host)
        ? pass(`an MX record points at ${host}`)
        : fail(`no MX record points at ${host}`),
    ),
    check("dkim", dkimName(k), `v=DKIM1; k=rsa; p=${k.dkimPublicKey}`, ["outbound"], l.dkim, (txt) => txt, (found) =>
      found.some((v) => dkimKeyOf(v) === k.dkimPublicKey)
        ? pass("the DKIM public key is published")
        : fail("no TXT record at the name is a DKIM1 record with this domain's public key"),
    ),
    check("spf", k.domain, `v=spf1 include:${s.spfInclude} ~all`, [], l.spf, (txt) => txt, (found) => spfVerdict(found, s.spfInclude)),
  ];
}

type Verdict = Pick<DomainCheck, "status" | "detail">;
const pass = (detail: string): Verdict => ({ status: "passed", detail });
const fail = (detail: string): Verdict => ({ status: "failed", detail });

function check<Q extends "TXT" | "MX">(
  name: DomainCheck["name"],
  recordName: string,
  expected: string,
  gates: Capability[],
  lookup: DnsLookup<Q>,
  show: (record: RecordValue[Q]) => string,
  judge: (found: string[], records: readonly RecordValue[Q][]) => Verdict,
): DomainCheck {
  const base = { name, recordName, expected, gates };
  switch (lookup.kind) {
    case "temporary":
      return { ...base, found: [], status: "temporary_error", detail: `DNS did not answer: ${lookup.reason}` };
    case "nxdomain":
      return { ...base, found: [], status: "failed", detail: `${recordName} does not exist (NXDOMAIN)` };
    case "nodata":
      return { ...base, found: [], status: "failed", detail: `${recordName} has no record of this type` };
    case "answer": {
      const found = lookup.records.map(show);
      return { ...base, found, ...judge(found, lookup.records) };
    }
  }
}

/** The p= tag of a DKIM key record (RFC 6376 §3.6.1), whitespace removed; undefined if it is not a DKIM1 key. */
export function dkimKeyOf(record: string): string | undefined {
  const tags = new Map<string, string>();
  for (const part of record.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s+/g, ""));
  }
  if ((tags.get("v") ?? "DKIM1") !== "DKIM1") return undefined;
  if ((tags.get("k") ?? "rsa") !== "rsa") return undefined;
  return tags.get("p");
}

// RFC 7208 §4.5: more than one v=spf1 record is a permanent error, so receivers ignore all of them.
function spfVerdict(found: string[], include: string): Verdict {
  const spf = found.filter((v) => /^v=spf1(\s|$)/i.test(v.trim()));
  if (spf.length === 0) return fail("no SPF record (advisory: sending does not need it)");
  if (spf.length > 1) return fail("more than one SPF record, which receivers treat as an error (advisory)");
  const terms = spf[0]!.toLowerCase().split(/\s+/);
  return terms.includes(`include:${include.toLowerCase()}`)
    ? pass(`the SPF record includes ${include}`)
    : fail(`the SPF record does not include ${include} (advisory: sending does not need it)`);
}

export type Outcome = "passed" | "failed" | "temporary";

/**
 * What the checks mean for one capability: passed when every check it needs passed; failed when one failed
 * definitively (a missing record stays missing however often DNS is asked); otherwise a temporary failure.
 */
export function outcomeFor(checks: readonly DomainCheck[], capability: Capability): Outcome {
  const needed = checks.filter((c) => c.gates.includes(capability));
  if (needed.some((c) => c.status === "failed")) return "failed";
  if (needed.some((c) => c.status === "temporary_error")) return "temporary";
  return "passed";
}
