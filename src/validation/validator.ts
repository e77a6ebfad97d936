// Email validation: syntax, then DNS for each distinct domain once and all in parallel (through the caching
// resolver), the organization's suppression list in one query, and the pure checks. DNS trouble makes a result
// `unknown`; it never fails the call. No SMTP probe is made: `deliverable` means the domain accepts mail and
// nothing flags the address, not that the mailbox exists.
import type { DnsResolver } from "../dns/resolver.js";
import { classify, mailHostOf, type MailHost, type ValidationResult } from "./classify.js";
import { loadDisposableDomains } from "./disposable.js";
import { isRoleAccount } from "./roles.js";
import { parseAddress } from "./syntax.js";
import { suggestDomain } from "./typos.js";

/** The organization's suppression list (kept by outbound delivery). */
export interface SuppressionLookup {
  /** Which of the given normalised addresses are suppressed for the organization. */
  suppressedAmong(organizationId: string, addresses: readonly string[]): Promise<ReadonlySet<string>>;
}

export interface EmailValidatorDeps {
  /** A caching resolver: answers are reused for their TTL across calls. */
  readonly resolver: DnsResolver;
  readonly suppressions: SuppressionLookup;
}

export type EmailValidator = ReturnType<typeof createEmailValidator>;

export function createEmailValidator(deps: EmailValidatorDeps) {
  const disposableDomainOf = loadDisposableDomains();

  async function mailHost(domain: string): Promise<MailHost> {
    const mx = await deps.resolver.lookup(domain, "MX");
    if (mx.kind !== "nodata") return mailHostOf(mx);
    const [a, aaaa] = await Promise.all([deps.resolver.lookup(domain, "A"), deps.resolver.lookup(domain, "AAAA")]);
    return mailHostOf(mx, a, aaaa);
  }

  return {
    /** One result per address, in input order. */
    async validate(organizationId: string, emails: readonly string[]): Promise<ValidationResult[]> {
      const parsed = emails.map((email) => ({ email, parsed: parseAddress(email) }));
      const valid = parsed.flatMap((p) => (p.parsed.ok ? [p.parsed] : []));
      const domains = [...new Set(valid.filter((p) => !p.isAddressLiteral).map((p) => p.domain))];
      const [hosts, suppressed] = await Promise.all([
        Promise.all(domains.map(async (d) => [d, await mailHost(d)] as const)).then((pairs) => new Map(pairs)),
        valid.length === 0
          ? new Set<string>()
          : deps.suppressions.suppressedAmong(organizationId, [...new Set(valid.map((p) => p.normalized))]),
      ]);
      return parsed.map(({ email, parsed: address }) => {
        if (!address.ok) {
          return classify({ email, parsed: address, mailHost: undefined, disposableDomain: undefined, role: false, suppressed: false, suggestion: undefined });
        }
        return classify({
          email,
          parsed: address,
          mailHost: address.isAddressLiteral ? undefined : hosts.get(address.domain),
          disposableDomain: address.isAddressLiteral ? undefined : disposableDomainOf(address.domain),
          role: isRoleAccount(address.localPart),
          suppressed: suppressed.has(address.normalized),
          suggestion: address.isAddressLiteral ? undefined : suggestDomain(address.domain),
        });
      });
    },
  };
}
