// SPF results reused across messages (src/authentication/spf-reuse.ts): the same client, HELO and sender get the kept
// result while the DNS answers it rested on are fresh, never longer than SPF_REUSE_MS; a temporary failure is not kept.
// Over the tests' DNS server and the service's resolver (no cache of its own here: what is asked shows in its counts).
import { expect, test } from "vitest";
import { spf } from "mailauth";
import { mailauthResolver } from "../../src/authentication/mailauth-resolver.js";
import { SPF_REUSE_MS, SpfResults, type SpfCheck } from "../../src/authentication/spf-reuse.js";
import { createResolver, type DnsResolver } from "../../src/dns/resolver.js";
import { authenticationFixture, client } from "../support/authentication-fixtures.js";

const fixture = authenticationFixture();
/** The service's resolver over the fixture's DNS server, without the cache the authenticator puts in front. */
let uncached: DnsResolver | undefined;
const resolver = () => (uncached ??= createResolver({ servers: [fixture.dns.address], timeoutMs: 300 }));

/** The check as the authenticator runs it: mailauth's strict SPF over the resolver it is given. */
async function check(over: DnsResolver, question: ReturnType<typeof client>): Promise<SpfCheck> {
  try {
    const result = await spf({ ip: question.remoteIp, helo: question.helo, sender: question.mailFrom, mta: "mx.test", resolver: mailauthResolver(over), strict: true });
    return { result: result.status.result === "temperror" ? "temperror" : (result.status.result as SpfCheck["result"]), domain: result.domain };
  } catch {
    return { result: "temperror", domain: "" };
  }
}

function clock() {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

test("the same client, HELO and sender reuse the result while its answers are fresh, and ask again once they are not", async () => {
  fixture.dns.set("reuse.example", [{ type: "TXT", text: "v=spf1 ip4:192.0.2.0/24 -all" }], 2);
  const time = clock();
  const results = new SpfResults(time.now);
  const question = client("news@reuse.example");
  const ask = () => results.get(question, resolver(), (over) => check(over, question));

  expect(await ask()).toEqual({ result: "pass", domain: "reuse.example" });
  expect(fixture.dns.queries("reuse.example", "TXT")).toBe(1);
  time.advance(1_900);
  expect((await ask()).result).toBe("pass");
  expect(fixture.dns.queries("reuse.example", "TXT")).toBe(1);

  // The record's TTL (2 s) has passed: the changed record is read.
  fixture.dns.set("reuse.example", [{ type: "TXT", text: "v=spf1 -all" }], 300);
  time.advance(200);
  expect((await ask()).result).toBe("fail");
  expect(fixture.dns.queries("reuse.example", "TXT")).toBe(2);

  // Another sender, HELO or address is another question.
  await results.get(client("billing@reuse.example"), resolver(), (over) => check(over, client("billing@reuse.example")));
  await results.get(client("news@reuse.example", "other.example"), resolver(), (over) => check(over, client("news@reuse.example", "other.example")));
  expect(fixture.dns.queries("reuse.example", "TXT")).toBe(4);
});

test(`a result is kept ${SPF_REUSE_MS / 1000} s at most, however long its answers' TTLs`, async () => {
  fixture.dns.set("long.example", [{ type: "TXT", text: "v=spf1 ip4:192.0.2.0/24 -all" }], 86_400);
  const time = clock();
  const results = new SpfResults(time.now);
  const question = client("news@long.example");
  const ask = () => results.get(question, resolver(), (over) => check(over, question));
  await ask();
  time.advance(SPF_REUSE_MS - 1);
  await ask();
  expect(fixture.dns.queries("long.example", "TXT")).toBe(1);
  time.advance(1);
  await ask();
  expect(fixture.dns.queries("long.example", "TXT")).toBe(2);
});

test("a temperror is not kept: the next message asks again", async () => {
  fixture.dns.set("flaky.example", [{ type: "TXT", text: "v=spf1 ip4:192.0.2.0/24 -all" }]);
  fixture.dns.fail("flaky.example", "servfail");
  const results = new SpfResults();
  const question = client("news@flaky.example");
  const ask = () => results.get(question, resolver(), (over) => check(over, question));
  expect((await ask()).result).toBe("temperror");
  const askedForTheFailure = fixture.dns.queries("flaky.example", "TXT");
  fixture.dns.clearFailure("flaky.example");
  expect((await ask()).result).toBe("pass");
  expect(fixture.dns.queries("flaky.example", "TXT")).toBe(askedForTheFailure + 1);
  // The pass is kept.
  await ask();
  expect(fixture.dns.queries("flaky.example", "TXT")).toBe(askedForTheFailure + 1);
});
