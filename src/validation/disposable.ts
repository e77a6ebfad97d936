// Disposable-mail domains, from the community list disposable-email-domains/disposable-email-domains as packaged
// by disposable-email-domains-js (CC0). The package is read once, behind this module, so it can be replaced.
import { disposableEmailBlocklistSet } from "disposable-email-domains-js";

let domains: ReadonlySet<string> | undefined;

/** The listed domain that `domain` is or lies below (mail.mailinator.com is mailinator.com), or undefined. */
export function disposableDomainOf(domain: string): string | undefined {
  domains ??= disposableEmailBlocklistSet();
  const labels = domain.split(".");
  for (let i = 0; i < labels.length - 1; i++) {
    const candidate = labels.slice(i).join(".");
    if (domains.has(candidate)) return candidate;
  }
  return undefined;
}
