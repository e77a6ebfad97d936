// The organizational domain of RFC 7489 §3.2: the registrable domain one label below its public suffix, read from
// the Public Suffix List (tldts' copy), private suffixes included, so that two tenants of a shared host
// (alice.github.io, mallory.github.io) are two organizations.
import { getDomain } from "tldts";

/** The organizational domain of a lower-case A-label domain, or null when the domain is itself a public suffix. */
export function organizationalDomain(domain: string): string | null {
  return getDomain(domain.toLowerCase().replace(/\.$/, ""), { allowPrivateDomains: true });
}

/** Whether two domains share an organizational domain (DMARC's relaxed alignment); a public suffix only itself. */
export function sameOrganization(a: string, b: string): boolean {
  return (organizationalDomain(a) ?? a) === (organizationalDomain(b) ?? b);
}
