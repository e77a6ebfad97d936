// API key strings: "mbx_<16 hex lookup id>_<43 base64url secret chars>". The lookup id finds the row; the whole
// string is hashed (SHA-256) and compared in constant time. 256 random bits make a slow hash unnecessary.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const KEY_PATTERN = /^mbx_([a-f0-9]{16})_[A-Za-z0-9_-]{43}$/;

export interface IssuedSecret {
  /** The full key, shown once to the operator and never stored. */
  readonly secret: string;
  readonly lookupId: string;
  readonly hash: string;
}

export function issueSecret(): IssuedSecret {
  const lookupId = randomBytes(8).toString("hex");
  const secret = `mbx_${lookupId}_${randomBytes(32).toString("base64url")}`;
  return { secret, lookupId, hash: hashSecret(secret) };
}

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** The lookup id of a well-formed key string, or undefined for anything else. */
export function lookupIdOf(secret: string): string | undefined {
  return KEY_PATTERN.exec(secret)?.[1];
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}
