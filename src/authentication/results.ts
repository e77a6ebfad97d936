// The result words of RFC 8601 §2.7 the authentication reports, one vocabulary for every method.

/**
 * pass, fail, softfail (SPF), neutral, none, temperror, permerror, policy (DKIM: a signature that verified but is
 * not acceptable: a weak key or algorithm, or an l= that leaves body bytes unsigned).
 */
export type AuthenticationResult = "pass" | "fail" | "softfail" | "neutral" | "none" | "temperror" | "permerror" | "policy";

/**
 * One word for several DKIM signatures: the first of this order any signature has. A pass is what authenticates;
 * a temperror may yet pass (so it outranks a fail of another signature); a fail is a broken signature; policy a
 * refused one; neutral one that could not be processed.
 */
const PRECEDENCE: readonly AuthenticationResult[] = ["pass", "temperror", "fail", "policy", "neutral", "permerror", "softfail", "none"];

export function strongest(results: readonly AuthenticationResult[]): AuthenticationResult {
  return PRECEDENCE.find((word) => results.includes(word)) ?? "none";
}
