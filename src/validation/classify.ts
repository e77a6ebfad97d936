// From what was found about an address to its verdict: each check with a sentence, one result and one reason.
// Pure, so the whole decision table is tested without DNS.
import type { DnsLookup } from "../dns/resolver.js";
import type { ParsedAddress } from "./syntax.js";

export type Verdict = "deliverable" | "undeliverable" | "risky" | "unknown";

/**
 * Why an address got its result, most decisive first: undeliverable (invalid_syntax, suppressed,
 * domain_not_found, null_mx, no_mail_server), unknown (dns_unavailable), risky (address_literal,
 * disposable_domain, role_account, possible_typo), deliverable (accepts_mail).
 */
export type Reason =
  | "invalid_syntax"
  | "suppressed"
  | "domain_not_found"
  | "null_mx"
  | "no_mail_server"
  | "dns_unavailable"
  | "address_literal"
  | "disposable_domain"
  | "role_account"
  | "possible_typo"
  | "accepts_mail";

export interface Check {
  readonly passed: boolean;
  readonly detail: string;
}

export interface ValidationResult {
  readonly email: string;
  readonly normalized: string | null;
  readonly result: Verdict;
  readonly reason: Reason;
  readonly checks: {
    readonly syntax: Check;
    readonly domain: Check;
    readonly mx: Check;
    readonly disposable: Check;
    readonly role: Check;
    readonly suppressed: Check;
  };
  readonly suggestion: string | null;
}

/** Where mail for a domain goes, as far as DNS tells (RFC 5321 §5.1). */
export type MailHost =
  | { readonly kind: "mx"; readonly hosts: readonly string[] }
  /** RFC 7505: the domain declares that it accepts no mail. */
  | { readonly kind: "null_mx" }
  /** No MX, but an A or AAAA record: the domain itself is the mail host ("implicit MX"). */
  | { readonly kind: "implicit" }
  | { readonly kind: "none" }
  | { readonly kind: "nxdomain" }
  | { readonly kind: "temporary"; readonly reason: string };

/**
 * Reads the MX answer, and the A and AAAA answers that are only asked when there is no MX. A null MX is an
 * exchange of "." (the root), which the wire codec returns as "".
 */
export function mailHostOf(mx: DnsLookup<"MX">, a?: DnsLookup<"A">, aaaa?: DnsLookup<"AAAA">): MailHost {
  if (mx.kind === "temporary") return { kind: "temporary", reason: mx.reason };
  if (mx.kind === "nxdomain") return { kind: "nxdomain" };
  if (mx.kind === "answer") {
    if (mx.records.some((r) => r.exchange === "")) return { kind: "null_mx" };
    const hosts = [...mx.records].sort((x, y) => x.preference - y.preference).map((r) => r.exchange);
    return { kind: "mx", hosts };
  }
  const fallbacks = [a, aaaa].filter((l) => l !== undefined);
  if (fallbacks.some((l) => l.kind === "answer")) return { kind: "implicit" };
  const temporary = fallbacks.find((l) => l.kind === "temporary");
  if (temporary?.kind === "temporary") return { kind: "temporary", reason: temporary.reason };
  return { kind: "none" };
}

export interface Findings {
  readonly email: string;
  readonly parsed: ParsedAddress;
  /** Undefined for an address literal (nothing to look up) or invalid syntax. */
  readonly mailHost: MailHost | undefined;
  readonly disposableDomain: string | undefined;
  readonly role: boolean;
  readonly suppressed: boolean;
  readonly suggestion: string | undefined;
}

const NOT_CHECKED: Check = { passed: false, detail: "not checked: the address is not valid" };

export function classify(f: Findings): ValidationResult {
  const { parsed } = f;
  if (!parsed.ok) {
    return {
      email: f.email,
      normalized: null,
      result: "undeliverable",
      reason: "invalid_syntax",
      checks: {
        syntax: { passed: false, detail: parsed.problem },
        domain: NOT_CHECKED,
        mx: NOT_CHECKED,
        disposable: NOT_CHECKED,
        role: NOT_CHECKED,
        suppressed: NOT_CHECKED,
      },
      suggestion: null,
    };
  }
  const [domain, mx] = dnsChecks(parsed.domain, parsed.isAddressLiteral, f.mailHost);
  const checks = {
    syntax: { passed: true, detail: "the address is well formed" },
    domain,
    mx,
    disposable: f.disposableDomain
      ? { passed: false, detail: `${f.disposableDomain} is a disposable-mail domain` }
      : { passed: true, detail: "not a known disposable-mail domain" },
    role: f.role
      ? { passed: false, detail: `${parsed.localPart} is a role account, not a person` }
      : { passed: true, detail: "not a role account" },
    suppressed: f.suppressed
      ? { passed: false, detail: "the address is on this organization's suppression list" }
      : { passed: true, detail: "the address is not on this organization's suppression list" },
  };
  const [result, reason] = verdictOf(f, checks);
  return { email: f.email, normalized: parsed.normalized, result, reason, checks, suggestion: f.suggestion ?? null };
}

function dnsChecks(domain: string, literal: boolean, host: MailHost | undefined): [Check, Check] {
  if (literal || host === undefined) {
    return [
      { passed: true, detail: `${domain} is an address literal: no DNS name to look up` },
      { passed: true, detail: "mail would go straight to the literal address" },
    ];
  }
  switch (host.kind) {
    case "mx":
      return [
        { passed: true, detail: `${domain} exists` },
        { passed: true, detail: `mail goes to ${host.hosts.join(", ")}` },
      ];
    case "implicit":
      return [
        { passed: true, detail: `${domain} exists` },
        { passed: true, detail: `no MX record; mail goes to ${domain} itself (its A/AAAA record)` },
      ];
    case "null_mx":
      return [
        { passed: true, detail: `${domain} exists` },
        { passed: false, detail: `${domain} publishes a null MX: it accepts no mail (RFC 7505)` },
      ];
    case "none":
      return [
        { passed: true, detail: `${domain} exists` },
        { passed: false, detail: `${domain} has no MX, A or AAAA record` },
      ];
    case "nxdomain":
      return [
        { passed: false, detail: `${domain} does not exist (NXDOMAIN)` },
        { passed: false, detail: "no domain, so no mail server" },
      ];
    case "temporary":
      return [
        { passed: false, detail: `DNS did not answer for ${domain}: ${host.reason}` },
        { passed: false, detail: "unknown until DNS answers" },
      ];
  }
}

/** What DNS alone decides; any other answer leaves the decision to the remaining checks. */
const DNS_VERDICTS: Partial<Record<MailHost["kind"], readonly [Verdict, Reason]>> = {
  nxdomain: ["undeliverable", "domain_not_found"],
  null_mx: ["undeliverable", "null_mx"],
  none: ["undeliverable", "no_mail_server"],
  temporary: ["unknown", "dns_unavailable"],
};

function verdictOf(f: Findings, checks: ValidationResult["checks"]): readonly [Verdict, Reason] {
  if (f.suppressed) return ["undeliverable", "suppressed"];
  const byDns = f.mailHost && DNS_VERDICTS[f.mailHost.kind];
  if (byDns) return byDns;
  if (f.parsed.ok && f.parsed.isAddressLiteral) return ["risky", "address_literal"];
  if (!checks.disposable.passed) return ["risky", "disposable_domain"];
  if (!checks.role.passed) return ["risky", "role_account"];
  if (f.suggestion !== undefined) return ["risky", "possible_typo"];
  return ["deliverable", "accepts_mail"];
}
