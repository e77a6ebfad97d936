// A customer domain registered through the API, its records published on the test DNS server, and verified.
import { expect } from "vitest";
import type { TestDnsServer } from "./dns-server.js";
import { uniqueName, type Tenant } from "./harness.js";

export interface RegisteredDomain {
  readonly id: string;
  readonly domain: string;
  readonly dnsRecords: { type: string; purpose: string; name: string; value: string; priority?: number }[];
}

export async function verifiedDomain(tenant: Tenant, dns: TestDnsServer): Promise<RegisteredDomain> {
  const res = await tenant.request("POST", "/v1/domains", { body: { domain: `${uniqueName("corp")}.example` } });
  const domain = res.body as RegisteredDomain;
  for (const r of domain.dnsRecords) {
    if (r.type === "MX") dns.set(r.name, [{ type: "MX", preference: r.priority!, exchange: r.value }]);
    else dns.set(r.name, [{ type: "TXT", text: r.value.match(/.{1,255}/g)! }]);
  }
  const verified = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
  expect(verified.body.capabilities).toEqual({ inbound: true, outbound: true });
  return domain;
}
