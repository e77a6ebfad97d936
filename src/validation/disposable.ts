// Disposable-mail domains, from the community list disposable-email-domains/disposable-email-domains as packaged
// by disposable-email-domains-js (CC0). The package is read behind this module, so it can be replaced.
import { disposableEmailBlocklistSet } from "disposable-email-domains-js";

export type DisposableDomainOf = (domain: string) => string | undefined;

/**
 * Loads the list (about 9,000 domains) and returns its lookup: the listed domain that `domain` is or lies below
 * (mail.mailinator.com is mailinator.com), or undefined. Built once per validator, at start-up, so that no request
 * pays for reading it.
 */
export function loadDisposableDomains(): DisposableDomainOf {
  const domains: ReadonlySet<string> = disposableEmailBlocklistSet();
  return (domain) => {
    const labels = domain.split(".");
    for (let i = 0; i < labels.length - 1; i++) {
      const candidate = labels.slice(i).join(".");
      if (domains.has(candidate)) return candidate;
    }
    return undefined;
  };
}
