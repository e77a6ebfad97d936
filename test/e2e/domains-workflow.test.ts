// The re-check workflow on a real Temporal server and worker: started by verify as domain/<domainId>, it re-checks
// the records every refresh age with no use of the domain, so a removed record revokes the capability and a
// restored one brings it back.
import { afterAll, beforeAll, expect, test } from "vitest";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";

let dns: TestDnsServer;
let app: TestApp;
beforeAll(async () => {
  dns = await startDnsServer();
  app = await startTestApp({ DNS_SERVERS: dns.serverList, DNS_TIMEOUT_MS: "100", DOMAIN_VERIFY_REFRESH: "1s", DOMAIN_VERIFY_GRACE: "1s" });
  await app.startWorker();
});
afterAll(async () => {
  await app?.stop();
  await dns?.stop();
});

test("re-checks a verified domain every refresh age on its own, revoking and restoring outbound with its DKIM record", async () => {
  const tenant = await app.createTenant();
  const res = await tenant.request("POST", "/v1/domains", { body: { domain: `${uniqueName("auto")}.example` } });
  const { id, dnsRecords } = res.body as { id: string; dnsRecords: { type: string; purpose: string; name: string; value: string; priority?: number }[] };
  for (const r of dnsRecords) {
    if (r.type === "MX") dns.set(r.name, [{ type: "MX", preference: r.priority!, exchange: r.value }]);
    else dns.set(r.name, [{ type: "TXT", text: r.value.match(/.{1,255}/g)! }]);
  }
  expect((await tenant.request("POST", `/v1/domains/${id}/verify`)).body.capabilities).toEqual({ inbound: true, outbound: true });

  const handle = app.temporal.workflow.getHandle(`domain/${id}`);
  const description = await handle.describe();
  expect(description.status.name).toBe("RUNNING");
  expect(description.type).toBe("domainVerification");
  expect(description.searchAttributes["MailboxOrganizationId"]).toEqual([tenant.organizationId]);

  const dkim = dnsRecords.find((r) => r.purpose === "dkim")!;
  dns.remove(dkim.name);
  const traffic = () => tenant.request("GET", `/v1/domains/${id}/traffic`).then((r) => r.body);
  const revoked = await eventually(async () => {
    const t = await traffic();
    return t.outbound.state === "failed" ? t : undefined;
  }, 10_000);
  expect(revoked.outbound.enabled).toBe(false);
  expect(revoked.inbound).toMatchObject({ enabled: true, state: "verified" });

  dns.set(dkim.name, [{ type: "TXT", text: dkim.value.match(/.{1,255}/g)! }]);
  await eventually(async () => ((await traffic()).outbound.state === "verified" ? true : undefined), 10_000);

  // A second verify finds the workflow running and starts no other.
  await tenant.request("POST", `/v1/domains/${id}/verify`);
  expect((await handle.describe()).runId).toBe(description.runId);
});
