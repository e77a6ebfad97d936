/**
 * The tenant scopes of the spec, and delivery:approve (an addition: deciding held sends); "*" grants all of them (other
 * key restrictions still apply).
 */
export const SCOPES = [
  "mailbox:manage",
  "mailbox:read",
  "mailbox:send",
  "delivery:read",
  "delivery:send",
  "delivery:approve",
  "domain:manage",
  "webhook:manage",
  "validation:use",
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Parses "a,b" or "*" as given to the operator CLI; throws on an unknown scope. */
export function parseScopes(list: string): string[] {
  const scopes = list.split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (const s of scopes) {
    if (s !== "*" && !isScope(s)) throw new Error(`unknown scope "${s}"; known: *, ${SCOPES.join(", ")}`);
  }
  if (scopes.length === 0) throw new Error("at least one scope is required");
  return [...new Set(scopes)];
}
