// Suggestions for mistyped domains of the big mailbox providers: gmial.com → gmail.com, hotmail.con →
// hotmail.com. Only these domains are suggested: for any other domain a near neighbour is as likely to be a real
// domain as a typo.
const PROVIDER_DOMAINS: readonly string[] = [
  "gmail.com", "googlemail.com", "yahoo.com", "yahoo.co.uk", "yahoo.fr", "ymail.com", "hotmail.com", "hotmail.co.uk",
  "hotmail.fr", "outlook.com", "live.com", "msn.com", "icloud.com", "me.com", "mac.com", "aol.com", "protonmail.com",
  "proton.me", "gmx.com", "gmx.de", "gmx.net", "web.de", "yandex.ru", "mail.ru", "qq.com", "163.com", "zoho.com",
  "comcast.net", "verizon.net", "att.net", "orange.fr", "free.fr", "t-online.de", "libero.it",
];
const PROVIDERS: ReadonlySet<string> = new Set(PROVIDER_DOMAINS);

// Mistyped top-level domains seen in sign-up forms: gmail.con, yahoo.cmo, comcast.ent.
const TLD_TYPOS: Readonly<Record<string, string>> = {
  con: "com", cmo: "com", cpm: "com", xom: "com", vom: "com", ocm: "com", comm: "com", om: "com", co: "com", cm: "com",
  nte: "net", ner: "net", ent: "net", nt: "net",
};

/** The provider domain `domain` is probably a typo of, or undefined. */
export function suggestDomain(domain: string): string | undefined {
  if (PROVIDERS.has(domain)) return undefined;
  const dot = domain.lastIndexOf(".");
  const fixedTld = TLD_TYPOS[domain.slice(dot + 1)];
  if (fixedTld !== undefined && PROVIDERS.has(`${domain.slice(0, dot)}.${fixedTld}`)) return `${domain.slice(0, dot)}.${fixedTld}`;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const provider of PROVIDER_DOMAINS) {
    // Short names are one edit away from real, unrelated domains (ge.com, me.com), so they get the TLD rule only;
    // long ones tolerate two edits (hotmial.con).
    const allowed = provider.length >= 11 ? 2 : provider.length >= 8 ? 1 : 0;
    if (allowed === 0) continue;
    const distance = editDistance(domain, provider, allowed);
    if (distance <= allowed && distance < bestDistance) {
      best = provider;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Optimal string alignment distance (Damerau-Levenshtein with adjacent transpositions: gmial is one edit from
 * gmail), stopping early once it exceeds `limit`.
 */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, beforePrevious[j - 2]! + 1);
      current.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > limit) return limit + 1;
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}
