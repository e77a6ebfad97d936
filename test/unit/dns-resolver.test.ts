// The stub resolver and its cache against a real DNS server on loopback (UDP and TCP), with zones set per test.
import dgram from "node:dgram";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createCachingResolver } from "../../src/dns/cache.js";
import { createResolver, type DnsResolver } from "../../src/dns/resolver.js";
import { createConfiguredResolver, parseDnsServers } from "../../src/dns/servers.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { uniqueName } from "../support/names.js";

let dns: TestDnsServer;
let resolver: DnsResolver;
beforeAll(async () => {
  dns = await startDnsServer();
  resolver = createResolver({ servers: [dns.address], timeoutMs: 300 });
});
afterAll(() => dns?.stop());

const domain = () => `${uniqueName("zone")}.example`;

describe("the resolver", () => {
  test("answers MX records with the smallest TTL of the set", async () => {
    const name = domain();
    dns.set(name, [{ type: "MX", preference: 10, exchange: `mx1.${name}` }, { type: "MX", preference: 20, exchange: `mx2.${name}` }], 120);
    dns.set(`${name}`, [{ type: "A", address: "192.0.2.1" }], 30);
    expect(await resolver.lookup(name, "MX")).toEqual({
      kind: "answer",
      records: [{ preference: 10, exchange: `mx1.${name}` }, { preference: 20, exchange: `mx2.${name}` }],
      ttl: 120,
    });
  });

  test("joins the character-strings of one TXT record and keeps separate records apart", async () => {
    const name = domain();
    dns.set(name, [{ type: "TXT", text: ["v=spf1 ", "-all"] }, { type: "TXT", text: "other" }]);
    const answer = await resolver.lookup(name, "TXT");
    expect(answer.kind === "answer" && [...answer.records].sort()).toEqual(["other", "v=spf1 -all"]);
  });

  test("tells NXDOMAIN from NODATA, each with the negative TTL of the SOA", async () => {
    const name = domain();
    dns.set(name, [{ type: "A", address: "192.0.2.1" }]);
    dns.negativeTtl = 45;
    expect(await resolver.lookup(`nothing.${name}`, "MX")).toEqual({ kind: "nxdomain", ttl: 45 });
    expect(await resolver.lookup(name, "MX")).toEqual({ kind: "nodata", ttl: 45 });
    dns.negativeTtl = 60;
  });

  test("treats a name with records only below it as existing (an empty non-terminal)", async () => {
    const name = domain();
    dns.set(`sel._domainkey.${name}`, [{ type: "TXT", text: "v=DKIM1" }]);
    expect((await resolver.lookup(`_domainkey.${name}`, "TXT")).kind).toBe("nodata");
  });

  test("follows a CNAME chain to the records and takes the shortest TTL along it", async () => {
    const name = domain();
    dns.set(`alias.${name}`, [{ type: "CNAME", target: `target.${name}` }], 20);
    dns.set(`target.${name}`, [{ type: "TXT", text: "found" }], 600);
    expect(await resolver.lookup(`alias.${name}`, "TXT")).toEqual({ kind: "answer", records: ["found"], ttl: 20 });
  });

  test.each([
    ["servfail", "SERVFAIL"],
    ["refused", "REFUSED"],
  ] as const)("reports %s as a temporary failure after asking again", async (failure, text) => {
    const name = domain();
    dns.set(name, [{ type: "MX", preference: 10, exchange: "mx.example" }]);
    dns.fail(name, failure);
    const answer = await resolver.lookup(name, "MX");
    expect(answer).toEqual({ kind: "temporary", reason: expect.stringContaining(text) });
    expect(dns.queries(name, "MX")).toBe(2);
  });

  test("reports a server that never answers as a temporary failure within the attempts' timeouts", async () => {
    const name = domain();
    dns.fail(name, "timeout");
    const started = performance.now();
    const answer = await resolver.lookup(name, "A");
    const elapsed = performance.now() - started;
    expect(answer).toEqual({ kind: "temporary", reason: expect.stringContaining("no answer within 300 ms") });
    expect(elapsed).toBeGreaterThanOrEqual(590);
    expect(elapsed).toBeLessThan(1500);
  });

  test("asks again over TCP when the UDP answer is truncated", async () => {
    const name = domain();
    const big = Array.from({ length: 12 }, (_, i) => ({ type: "TXT" as const, text: `${i}-${"x".repeat(200)}` }));
    dns.set(name, big);
    const answer = await resolver.lookup(name, "TXT");
    expect(answer.kind === "answer" && answer.records.length).toBe(12);
    expect(dns.tcpQueries(name)).toBe(1);
  });

  test("moves on to the next server when the first one is unreachable", async () => {
    // A UDP port bound and closed again: nothing listens there, so the kernel answers port unreachable.
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((r) => socket.bind(0, "127.0.0.1", () => r()));
    const deadPort = (socket.address() as AddressInfo).port;
    socket.close();
    const name = domain();
    dns.set(name, [{ type: "A", address: "192.0.2.9" }]);
    const twoServers = createResolver({ servers: [{ host: "127.0.0.1", port: deadPort }, dns.address], timeoutMs: 300 });
    expect(await twoServers.lookup(name, "A")).toMatchObject({ kind: "answer", records: ["192.0.2.9"] });
  });
});

describe("the caching resolver", () => {
  test("answers from the cache within the TTL and asks again once it has passed", async () => {
    let clock = 0;
    const cached = createCachingResolver(resolver, { now: () => clock });
    const name = domain();
    dns.set(name, [{ type: "A", address: "192.0.2.1" }], 5);
    await cached.lookup(name, "A");
    dns.set(name, [{ type: "A", address: "192.0.2.2" }], 5);
    clock = 4_999;
    expect(await cached.lookup(name, "A")).toMatchObject({ records: ["192.0.2.1"] });
    expect(dns.queries(name, "A")).toBe(1);
    clock = 5_000;
    expect(await cached.lookup(name, "A")).toMatchObject({ records: ["192.0.2.2"] });
    expect(dns.queries(name, "A")).toBe(2);
  });

  test("keeps a negative answer for its SOA TTL", async () => {
    let clock = 0;
    const cached = createCachingResolver(resolver, { now: () => clock });
    const name = domain();
    dns.negativeTtl = 10;
    expect((await cached.lookup(name, "MX")).kind).toBe("nxdomain");
    dns.negativeTtl = 60;
    dns.set(name, [{ type: "MX", preference: 10, exchange: "mx.example" }]);
    clock = 9_000;
    expect((await cached.lookup(name, "MX")).kind).toBe("nxdomain");
    clock = 10_000;
    expect((await cached.lookup(name, "MX")).kind).toBe("answer");
  });

  test.each([
    ["a resolver that allows none", () => resolver],
    ["DNS_FAILURE_CACHE_SECONDS=0", () => createConfiguredResolver(loadConfig({ DNS_SERVERS: dns.serverList, DNS_FAILURE_CACHE_SECONDS: "0" }))],
  ])("keeps no temporary failure of %s", async (_name, inner) => {
    const cached = createCachingResolver(inner());
    const name = domain();
    dns.fail(name, "servfail");
    expect((await cached.lookup(name, "A")).kind).toBe("temporary");
    dns.clearFailure(name);
    dns.set(name, [{ type: "A", address: "192.0.2.3" }]);
    expect((await cached.lookup(name, "A")).kind).toBe("answer");
  });

  test("keeps a server's silence for DNS_FAILURE_CACHE_SECONDS: the next lookup fails at once, and a name that recovers is asked again after it", async () => {
    let clock = 0;
    const config = loadConfig({ DNS_SERVERS: dns.serverList, DNS_TIMEOUT_MS: "300", DNS_FAILURE_CACHE_SECONDS: "5" });
    const cached = createCachingResolver(createConfiguredResolver(config), { now: () => clock });
    const name = domain();
    dns.fail(name, "timeout");
    const timed = async () => {
      const started = performance.now();
      const answer = await cached.lookup(name, "TXT");
      return { answer, ms: performance.now() - started };
    };
    const first = await timed();
    expect(first.answer).toEqual({ kind: "temporary", reason: expect.stringContaining("no answer within 300 ms") });
    expect(first.ms).toBeGreaterThanOrEqual(590);
    expect(dns.queries(name, "TXT")).toBe(2);

    const second = await timed();
    expect(second.answer).toEqual(first.answer);
    // Not asked again (the count), and not waited on: less than one attempt's timeout. (A 100 ms bound on this
    // in-memory answer left a busy machine's event loop no room.)
    expect(second.ms).toBeLessThan(300);
    expect(dns.queries(name, "TXT")).toBe(2);

    dns.clearFailure(name);
    dns.set(name, [{ type: "TXT", text: "v=spf1 -all" }], 60);
    clock = 4_999;
    expect((await timed()).answer.kind).toBe("temporary");
    expect(dns.queries(name, "TXT")).toBe(2);
    clock = 5_000;
    expect((await timed()).answer).toEqual({ kind: "answer", records: ["v=spf1 -all"], ttl: 60 });
    expect(dns.queries(name, "TXT")).toBe(3);
  });

  test("keeps a SERVFAIL as briefly, per name and type", async () => {
    const config = loadConfig({ DNS_SERVERS: dns.serverList, DNS_TIMEOUT_MS: "300" });
    const cached = createCachingResolver(createConfiguredResolver(config));
    const name = domain();
    dns.set(name, [{ type: "A", address: "192.0.2.7" }]);
    dns.fail(name, "servfail", "MX");
    expect((await cached.lookup(name, "MX")).kind).toBe("temporary");
    expect((await cached.lookup(name, "MX")).kind).toBe("temporary");
    expect(dns.queries(name, "MX")).toBe(2);
    expect((await cached.lookup(name, "A")).kind).toBe("answer");
  });

  test("counts a kept failure among its bounded entries", async () => {
    const cached = createCachingResolver(resolver, { maxEntries: 1, failureTtlSeconds: 60 });
    const [failing, other] = [domain(), domain()];
    dns.fail(failing, "servfail");
    dns.set(other, [{ type: "A", address: "192.0.2.9" }]);
    await cached.lookup(failing, "A");
    await cached.lookup(failing, "A");
    expect(dns.queries(failing, "A")).toBe(2);
    await cached.lookup(other, "A");
    await cached.lookup(failing, "A");
    expect(dns.queries(failing, "A")).toBe(4);
  });

  test("shares one query among concurrent lookups of the same name and type", async () => {
    const cached = createCachingResolver(resolver);
    const name = domain();
    dns.set(name, [{ type: "A", address: "192.0.2.4" }]);
    dns.delay(name, 50);
    const answers = await Promise.all(Array.from({ length: 20 }, () => cached.lookup(name.toUpperCase(), "A")));
    expect(new Set(answers.map((a) => a.kind))).toEqual(new Set(["answer"]));
    expect(dns.queries(name, "A")).toBe(1);
  });

  test("drops the least recently used entry beyond its size", async () => {
    const cached = createCachingResolver(resolver, { maxEntries: 2 });
    const [a, b, c] = [domain(), domain(), domain()];
    for (const n of [a, b, c]) dns.set(n, [{ type: "A", address: "192.0.2.5" }]);
    await cached.lookup(a, "A");
    await cached.lookup(b, "A");
    await cached.lookup(a, "A");
    await cached.lookup(c, "A");
    await cached.lookup(a, "A");
    await cached.lookup(b, "A");
    expect([dns.queries(a, "A"), dns.queries(b, "A"), dns.queries(c, "A")]).toEqual([1, 2, 1]);
  });
});

describe("the DNS and verification settings", () => {
  test("are read from DNS_SERVERS, DOMAIN_VERIFY_REFRESH and DOMAIN_VERIFY_GRACE, with defaults", () => {
    const config = loadConfig({ DNS_SERVERS: "127.0.0.1:5353", DOMAIN_VERIFY_REFRESH: "5s", DOMAIN_VERIFY_GRACE: "2h" });
    expect(config.dnsServers).toEqual([{ host: "127.0.0.1", port: 5353 }]);
    expect(config.customerDomains).toMatchObject({ refreshMs: 5000, graceMs: 7_200_000 });
    expect(loadConfig({}).dnsServers).toBeUndefined();
    expect(loadConfig({}).customerDomains).toMatchObject({
      refreshMs: 6 * 3_600_000,
      graceMs: 72 * 3_600_000,
      inboundMxHost: "mx.agents.localhost",
      spfInclude: "_spf.agents.localhost",
    });
  });

  test("keep failures 30 s by default, DNS_FAILURE_CACHE_SECONDS from 0 (none) to 300 (RFC 9520's 5 minutes)", () => {
    expect(loadConfig({}).dnsFailureCacheSeconds).toBe(30);
    expect(loadConfig({ DNS_FAILURE_CACHE_SECONDS: "0" }).dnsFailureCacheSeconds).toBe(0);
    expect(loadConfig({ DNS_FAILURE_CACHE_SECONDS: "300" }).dnsFailureCacheSeconds).toBe(300);
    for (const bad of ["301", "-1", "1.5", "30s"]) expect(() => loadConfig({ DNS_FAILURE_CACHE_SECONDS: bad })).toThrow(/DNS_FAILURE_CACHE_SECONDS/);
  });

  test("name every bad value in one error", () => {
    expect(() => loadConfig({ DNS_SERVERS: "dns.example", DOMAIN_VERIFY_REFRESH: "500ms", DOMAIN_VERIFY_GRACE: "6 hours" })).toThrow(
      /DNS_SERVERS[\s\S]*DOMAIN_VERIFY_REFRESH[\s\S]*DOMAIN_VERIFY_GRACE/,
    );
  });

  test.each([
    ["127.0.0.1:5353", [{ host: "127.0.0.1", port: 5353 }], []],
    ["10.0.0.2, [::1]:53, ::1", [{ host: "10.0.0.2", port: 53 }, { host: "::1", port: 53 }, { host: "::1", port: 53 }], []],
    ["dns.example:53, 1.2.3.4:99999, 1.2.3.4:53:1", [], ["dns.example:53", "1.2.3.4:99999", "1.2.3.4:53:1"]],
  ])("read the DNS_SERVERS list %j into servers and invalid entries", (list, servers, invalid) => {
    expect(parseDnsServers(list)).toEqual({ servers, invalid });
  });
});
