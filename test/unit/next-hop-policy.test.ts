// The address policy of outbound next hops: what a recipient domain's MX (or A/AAAA) records resolve to is checked
// against the webhooks' public-address policy before any connection, through the real resolver and a real DNS
// server on loopback. nextHops only resolves: nothing here connects anywhere.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createResolver } from "../../src/dns/resolver.js";
import { nextHops, type NextHopSettings } from "../../src/outbound/delivery/next-hop.js";
import { classifyTransportFailure } from "../../src/outbound/classify-smtp-result.js";
import { parseSmtpRoutes } from "../../src/outbound/smtp-routes.js";
import { startDnsServer, type RecordInput, type TestDnsServer } from "../support/dns-server.js";
import { uniqueName } from "../support/names.js";

let dns: TestDnsServer;
let settings: NextHopSettings;
beforeAll(async () => {
  dns = await startDnsServer();
  settings = {
    routes: parseSmtpRoutes("routed.test=127.0.0.1:2526").routes,
    managedDomain: "agents.test",
    localSmtp: { host: "127.0.0.1", port: 2525 },
    mxPort: 25,
    addressPolicy: { allowHosts: [] },
    resolver: createResolver({ servers: [dns.address], timeoutMs: 300 }),
  };
});
afterAll(() => dns?.stop());

/** A domain whose one MX host has these address records. */
function mxDomain(...records: RecordInput[]): string {
  const domain = `${uniqueName("rcpt")}.example`;
  dns.set(domain, [{ type: "MX", preference: 10, exchange: `mx.${domain}` }]);
  for (const type of ["A", "AAAA"] as const) {
    const of = records.filter((r) => r.type === type);
    if (of.length > 0) dns.set(`mx.${domain}`, of);
  }
  return domain;
}

describe("next hops of a recipient domain", () => {
  test.each([
    ["127.0.0.1", "loopback"],
    ["127.8.9.10", "loopback"],
    ["10.1.2.3", "private"],
    ["172.20.0.5", "private"],
    ["192.168.0.10", "private"],
    ["169.254.169.254", "link-local"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["0.0.0.0", "this-network"],
  ])("an MX host at %s is refused (%s): a final failure with no hop to connect to", async (address, why) => {
    const domain = mxDomain({ type: "A", address });
    const hops = await nextHops(domain, settings);
    expect(hops).toEqual({ kind: "failure", failure: { code: "ENOTPUBLIC", message: expect.stringContaining(`mx.${domain} at ${address} (${why}`) } });
    if (hops.kind !== "failure") return;
    expect(classifyTransportFailure(hops.failure)).toMatchObject({ kind: "rejected", failureCode: "next_hop_not_public", hardBounce: false });
  });

  test.each([
    ["::1", "loopback"],
    ["fd00:ec2::254", "unique local"],
    ["fe80::1", "link-local"],
    ["::ffff:7f00:1", "IPv4-mapped"], // ::ffff:127.0.0.1
  ])("an MX host at %s is refused (%s)", async (address, why) => {
    const hops = await nextHops(mxDomain({ type: "AAAA", address }), settings);
    expect(hops).toMatchObject({ kind: "failure", failure: { code: "ENOTPUBLIC", message: expect.stringContaining(why) } });
  });

  test("a domain without MX whose own address is private is refused (implicit MX)", async () => {
    const domain = `${uniqueName("implicit")}.example`;
    dns.set(domain, [{ type: "A", address: "10.0.0.7" }]);
    expect(await nextHops(domain, settings)).toMatchObject({ kind: "failure", failure: { code: "ENOTPUBLIC", message: expect.stringContaining("10.0.0.7 (private)") } });
  });

  test("an MX that names an address literal is checked like a resolved one", async () => {
    const domain = `${uniqueName("literal")}.example`;
    dns.set(domain, [{ type: "MX", preference: 10, exchange: "169.254.169.254" }]);
    expect(await nextHops(domain, settings)).toMatchObject({ kind: "failure", failure: { code: "ENOTPUBLIC" } });
  });

  test("only the public addresses of a domain are hops; refused ones do not count toward the limit of ten", async () => {
    const domain = `${uniqueName("mixed")}.example`;
    dns.set(domain, [
      { type: "MX", preference: 5, exchange: `inside.${domain}` },
      { type: "MX", preference: 10, exchange: `outside.${domain}` },
    ]);
    dns.set(
      `inside.${domain}`,
      Array.from({ length: 12 }, (_, i) => ({ type: "A", address: `10.0.0.${i + 1}` })),
    );
    dns.set(`outside.${domain}`, [{ type: "A", address: "93.184.215.14" }]);
    expect(await nextHops(domain, settings)).toEqual({ kind: "hops", hops: [{ host: "93.184.215.14", port: 25, name: `outside.${domain}` }] });
  });

  test("a temporary DNS failure of another MX host defers rather than fails", async () => {
    const domain = `${uniqueName("flaky")}.example`;
    dns.set(domain, [
      { type: "MX", preference: 5, exchange: `inside.${domain}` },
      { type: "MX", preference: 10, exchange: `down.${domain}` },
    ]);
    dns.set(`inside.${domain}`, [{ type: "A", address: "192.168.1.1" }]);
    dns.fail(`down.${domain}`, "servfail");
    expect(await nextHops(domain, settings)).toMatchObject({ kind: "failure", failure: { code: "EDNS" } });
  });

  test("DELIVERY_ALLOW_HOSTS exempts a listed MX host name or address, and nothing else", async () => {
    const byName = mxDomain({ type: "A", address: "127.0.0.1" });
    const byAddress = mxDomain({ type: "A", address: "127.0.0.2" });
    const other = mxDomain({ type: "A", address: "127.0.0.3" });
    const allowing = { ...settings, addressPolicy: { allowHosts: [`mx.${byName}`, "127.0.0.2"] } };
    expect(await nextHops(byName, allowing)).toEqual({ kind: "hops", hops: [{ host: "127.0.0.1", port: 25, name: `mx.${byName}` }] });
    expect(await nextHops(byAddress, allowing)).toEqual({ kind: "hops", hops: [{ host: "127.0.0.2", port: 25, name: `mx.${byAddress}` }] });
    expect(await nextHops(other, allowing)).toMatchObject({ kind: "failure", failure: { code: "ENOTPUBLIC" } });
  });

  test("operator routes and the managed domain's own route are trusted, whatever their address", async () => {
    expect(await nextHops("routed.test", settings)).toEqual({ kind: "hops", hops: [{ host: "127.0.0.1", port: 2526, name: "127.0.0.1" }] });
    expect(await nextHops("agents.test", settings)).toEqual({ kind: "hops", hops: [{ host: "127.0.0.1", port: 2525, name: "127.0.0.1" }] });
  });
});
