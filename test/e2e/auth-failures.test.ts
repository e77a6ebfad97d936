// What unknown keys cost: the Authenticator on the real database, its queries counted at the Database seam and its
// clock in the test's hand. Unknown lookup ids are remembered for KEY_CACHE_MS, concurrent lookups share a query,
// and an address (an IPv6 /64) that keeps failing is refused with 429 before any query, while keys the process
// knows and keys from other addresses keep working.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { issueKey } from "../../src/admin/api-keys.js";
import { createOrganization } from "../../src/admin/organizations.js";
import { createAuthenticator, type Authenticator } from "../../src/auth/authenticator.js";
import { loadConfig } from "../../src/config.js";
import { openDatabase, type Database } from "../../src/db/database.js";
import { DomainError } from "../../src/errors.js";
import { uniqueName } from "../support/harness.js";

const CACHE_MS = 2000;
const FAILURES_PER_MINUTE = 10;
const defaults = loadConfig({}).defaults;

let db: Database;
let queries = 0;
/** The database as the Authenticator sees it, every statement counted. */
let counted: Database;

beforeAll(async () => {
  db = await openDatabase(inject("databaseUrl"), { poolMax: 4 });
  counted = {
    ...db,
    sql: {
      ...db.sql,
      query: (text, values) => {
        queries++;
        return db.sql.query(text, values);
      },
    },
  };
});
afterAll(() => db?.close());

/** An authenticator whose clock starts 1 s into a minute window and moves only when the test moves it. */
function authenticatorAt(): { auth: Authenticator; advance(ms: number): void } {
  let t = Math.floor(Date.now() / 60_000) * 60_000 + 1000;
  const auth = createAuthenticator(counted, { cacheMs: CACHE_MS, failuresPerMinute: FAILURES_PER_MINUTE, now: () => t });
  return { auth, advance: (ms) => (t += ms) };
}

const unknownKey = () => `mbx_${randomBytes(8).toString("hex")}_${randomBytes(32).toString("base64url")}`;

async function newKey(): Promise<string> {
  const org = await createOrganization(db.fork(), defaults, { name: uniqueName("auth-flood") });
  return (await issueKey(db.fork(), defaults, org.id, { scopes: ["*"] })).secret;
}

/** The error code an authentication ends with, or "ok". */
async function outcome(auth: Authenticator, key: string, peer: string): Promise<string> {
  try {
    await auth.authenticate(key, peer);
    return "ok";
  } catch (e) {
    if (e instanceof DomainError) return e.retryAfterSeconds > 0 ? `${e.errorCode} ${e.retryAfterSeconds}` : e.errorCode;
    throw e;
  }
}

describe("unknown keys", () => {
  test("a flood of unknown lookup ids from one address costs at most the failure limit in queries, then 429 with Retry-After", async () => {
    const { auth } = authenticatorAt();
    queries = 0;
    const outcomes: string[] = [];
    for (let i = 0; i < 100; i++) outcomes.push(await outcome(auth, unknownKey(), "198.51.100.7"));
    expect(outcomes.slice(0, FAILURES_PER_MINUTE)).toEqual(Array<string>(FAILURES_PER_MINUTE).fill("unauthenticated"));
    // The window started 1 s ago: the rest of the minute is left.
    expect(new Set(outcomes.slice(FAILURES_PER_MINUTE))).toEqual(new Set(["too_many_failed_authentications 59"]));
    expect(queries).toBe(FAILURES_PER_MINUTE);
  });

  test("concurrent lookups of one unknown id from many addresses share a query, and the id stays unknown for KEY_CACHE_MS", async () => {
    const { auth, advance } = authenticatorAt();
    const key = unknownKey();
    queries = 0;
    const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) => outcome(auth, key, `198.51.100.${i}`)));
    expect(new Set(outcomes)).toEqual(new Set(["unauthenticated"]));
    expect(queries).toBe(1);
    advance(CACHE_MS - 1);
    expect(await outcome(auth, key, "192.0.2.1")).toBe("unauthenticated");
    expect(queries).toBe(1);
    advance(2);
    expect(await outcome(auth, key, "192.0.2.1")).toBe("unauthenticated");
    expect(queries).toBe(2);
  });

  test("while one address is refused, a new valid key works from another address and a key the process knows works from the refused one", async () => {
    const { auth, advance } = authenticatorAt();
    const [known, fresh] = await Promise.all([newKey(), newKey()]);
    expect(await outcome(auth, known, "203.0.113.9")).toBe("ok");
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) await outcome(auth, unknownKey(), "198.51.100.7");
    expect(await outcome(auth, unknownKey(), "198.51.100.7")).toMatch(/^too_many_failed_authentications /);

    expect(await outcome(auth, fresh, "198.51.100.7")).toMatch(/^too_many_failed_authentications /);
    expect(await outcome(auth, fresh, "203.0.113.10")).toBe("ok");
    // Past KEY_CACHE_MS the known key is read again: a query a known key may still make.
    advance(CACHE_MS + 1);
    queries = 0;
    expect(await outcome(auth, known, "198.51.100.7")).toBe("ok");
    expect(queries).toBe(1);
    // The next minute is a new window.
    advance(60_000);
    expect(await outcome(auth, unknownKey(), "198.51.100.7")).toBe("unauthenticated");
  });

  test("an IPv6 client is counted by its /64, and a valid key's first use does not count against its address", async () => {
    const { auth } = authenticatorAt();
    for (let i = 0; i < FAILURES_PER_MINUTE - 1; i++) await outcome(auth, unknownKey(), `2001:db8:1:2::${i.toString(16)}`);
    // Lookups of keys that exist are charged in advance and refunded: the address still has one failure left.
    for (let i = 0; i < 3; i++) expect(await outcome(auth, await newKey(), "2001:db8:1:2::aaaa")).toBe("ok");
    expect(await outcome(auth, unknownKey(), "2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe("unauthenticated");
    expect(await outcome(auth, unknownKey(), "2001:0db8:0001:0002::1")).toMatch(/^too_many_failed_authentications /);
    expect(await outcome(auth, unknownKey(), "2001:db8:1:3::1")).toBe("unauthenticated");
  });
});
