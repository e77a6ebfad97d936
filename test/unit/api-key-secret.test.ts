import { describe, expect, test } from "vitest";
import { hashSecret, issueSecret, lookupIdOf, secretMatches } from "../../src/auth/api-key-secret.js";

describe("API key secrets", () => {
  test("are recognisable, carry their lookup id, and are stored only as a hash", () => {
    const issued = issueSecret();
    expect(issued.secret).toMatch(/^mbx_[a-f0-9]{16}_[A-Za-z0-9_-]{43}$/);
    expect(lookupIdOf(issued.secret)).toBe(issued.lookupId);
    expect(issued.hash).toBe(hashSecret(issued.secret));
    expect(issued.hash).not.toContain(issued.secret.slice(22));
  });

  test("match only the exact secret", () => {
    const { secret, hash } = issueSecret();
    expect(secretMatches(secret, hash)).toBe(true);
    expect(secretMatches(secret.slice(0, -1) + (secret.endsWith("A") ? "B" : "A"), hash)).toBe(false);
    expect(secretMatches(secret, "")).toBe(false);
  });

  test("are never the same twice", () => {
    const secrets = new Set(Array.from({ length: 200 }, () => issueSecret().secret));
    expect(secrets.size).toBe(200);
  });

  test.each(["", "mbx_", "mbx_0123456789abcdef_short", "xyz_0123456789abcdef_" + "A".repeat(43)])(
    "have no lookup id when malformed: %j",
    (value) => expect(lookupIdOf(value)).toBeUndefined(),
  );
});
