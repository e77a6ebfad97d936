// The capability checks inbound SMTP and sending call, driven through the refresh age and the grace period with
// short configured durations against a real DNS server: refused after grace, restored by a fresh verification,
// revoked at once by a removed record; and the DKIM signing key.
import { createPublicKey, createSign, createVerify } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CustomerDomain } from "../../src/db/entities/index.js";
import { createConfiguredResolver } from "../../src/dns/servers.js";
import { createDomainCapabilities, type DomainCapabilities } from "../../src/domains/capabilities.js";
import { createDkimKeyVault } from "../../src/domains/dkim-keys.js";
import { createConfiguredSigningKeys, createConfiguredVerifier } from "../../src/domains/setup.js";
import { DomainError } from "../../src/errors.js";
import { verifiedDomain as verifiedDomainOn, type RegisteredDomain } from "../support/customer-domains.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

const REFRESH_MS = 1000;
const GRACE_MS = 2000;
const DKIM_SECRET = "a-test-secret-of-at-least-thirty-two-characters";

let dns: TestDnsServer;
let app: TestApp;
let capabilities: DomainCapabilities;
beforeAll(async () => {
  dns = await startDnsServer();
  app = await startTestApp({
    DNS_SERVERS: dns.serverList,
    DNS_TIMEOUT_MS: "100",
    DOMAIN_VERIFY_REFRESH: `${REFRESH_MS}ms`,
    DOMAIN_VERIFY_GRACE: `${GRACE_MS}ms`,
    DKIM_KEY_SECRET: DKIM_SECRET,
  });
  const verifier = createConfiguredVerifier(app.config, app.db, createConfiguredResolver(app.config));
  capabilities = createDomainCapabilities({ db: app.db, verifier, refreshMs: REFRESH_MS });
});
afterAll(async () => {
  await app?.stop();
  await dns?.stop();
});

const verifiedDomain = (tenant: Tenant) => verifiedDomainOn(tenant, dns);

const names = (d: RegisteredDomain) => d.dnsRecords.map((r) => r.name);
const failAll = (d: RegisteredDomain, how: "servfail" | "timeout") => names(d).forEach((n) => dns.fail(n, how));
const clearAll = (d: RegisteredDomain) => names(d).forEach((n) => dns.clearFailure(n));

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(DomainError);
  return { code: (e as DomainError).errorCode, message: (e as DomainError).message };
}

describe("inbound admission and sending through a DNS outage", () => {
  test("keeps both capabilities through the grace period, refuses after it, and restores them on a fresh verification", async () => {
    const tenant = await app.createTenant();
    const domain = await verifiedDomain(tenant);
    expect(await capabilities.inboundDomainStatus(domain.domain.toUpperCase())).toEqual({
      organizationId: tenant.organizationId,
      domainId: domain.id,
      admitted: true,
      temporary: false,
      reason: expect.stringContaining("verified"),
    });
    expect(await capabilities.requireOutbound(tenant.organizationId, domain.domain)).toEqual({ domainId: domain.id, domain: domain.domain });

    failAll(domain, "servfail");
    await sleep(REFRESH_MS + 100);
    // The last check is older than the refresh age: this use re-checks, meets SERVFAIL, and grace begins.
    const inGrace = await capabilities.inboundDomainStatus(domain.domain);
    expect(inGrace).toMatchObject({ admitted: true, reason: expect.stringContaining("stays verified until") });
    await expect(capabilities.requireOutbound(tenant.organizationId, domain.domain)).resolves.toBeDefined();
    const inboxInGrace = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "grace", displayName: "G", domainId: domain.id } });
    expect(inboxInGrace.status).toBe(201);
    const traffic = await tenant.request("GET", `/v1/domains/${domain.id}/traffic`);
    expect(traffic.body.inbound).toMatchObject({ enabled: true, state: "grace", graceUntil: expect.any(String) });

    await sleep(Date.parse(traffic.body.inbound.graceUntil) - Date.now() + 50);
    expect(await capabilities.inboundDomainStatus(domain.domain)).toMatchObject({
      admitted: false,
      temporary: true,
      reason: expect.stringContaining("grace period has ended"),
    });
    expect(await refusal(capabilities.requireOutbound(tenant.organizationId, domain.domain))).toEqual({
      code: "domain_not_verified",
      message: expect.stringContaining(`sending from ${domain.domain} is refused`),
    });
    const inboxAfter = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "late", displayName: "L", domainId: domain.id } });
    expect([inboxAfter.status, inboxAfter.body.error]).toEqual([403, "domain_not_verified"]);

    clearAll(domain);
    const fresh = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    expect(fresh.body.capabilities).toEqual({ inbound: true, outbound: true });
    expect(await capabilities.inboundDomainStatus(domain.domain)).toMatchObject({ admitted: true });
    await expect(capabilities.requireOutbound(tenant.organizationId, domain.domain)).resolves.toBeDefined();
  });

  test("revokes only the capability whose record was removed, at the next check, as a definitive refusal", async () => {
    const tenant = await app.createTenant();
    const domain = await verifiedDomain(tenant);
    dns.remove(domain.domain, "MX");
    await sleep(REFRESH_MS + 100);
    expect(await capabilities.inboundDomainStatus(domain.domain)).toMatchObject({
      admitted: false,
      temporary: false,
      reason: expect.stringContaining("no longer passes inbound verification (mx:"),
    });
    await expect(capabilities.requireOutbound(tenant.organizationId, domain.domain)).resolves.toBeDefined();
    const traffic = await tenant.request("GET", `/v1/domains/${domain.id}/traffic`);
    expect(traffic.body.inbound).toMatchObject({ enabled: false, state: "failed", lastSuccessAt: expect.any(String) });
    expect(traffic.body.outbound).toMatchObject({ enabled: true, state: "verified" });
  });

  test("re-checks a stale domain once however many uses arrive together, and not at all while it is fresh", async () => {
    const tenant = await app.createTenant();
    const domain = await verifiedDomain(tenant);
    const ownership = domain.dnsRecords[0]!.name;
    const asked = dns.queries(ownership);
    await capabilities.inboundDomainStatus(domain.domain);
    expect(dns.queries(ownership)).toBe(asked);
    await sleep(REFRESH_MS + 100);
    await Promise.all(Array.from({ length: 10 }, () => capabilities.inboundDomainStatus(domain.domain)));
    expect(dns.queries(ownership)).toBe(asked + 1);
  });

  test("never re-checks a domain that was never verified, and refuses it as definitive", async () => {
    const tenant = await app.createTenant();
    const res = await tenant.request("POST", "/v1/domains", { body: { domain: `${uniqueName("new")}.example` } });
    const status = await capabilities.inboundDomainStatus(res.body.domain);
    expect(status).toEqual({
      organizationId: tenant.organizationId,
      domainId: res.body.id,
      admitted: false,
      temporary: false,
      reason: expect.stringContaining("has not verified inbound mail yet"),
    });
    expect(dns.queries(res.body.dnsRecords[0].name)).toBe(0);
    expect(await refusal(capabilities.requireOutbound(tenant.organizationId, res.body.domain))).toMatchObject({ code: "domain_not_verified" });
  });

  test("knows no organization for a domain nobody registered, and refuses sending from another organization's domain", async () => {
    const [owner, other] = [await app.createTenant(), await app.createTenant()];
    const domain = await verifiedDomain(owner);
    expect(await capabilities.inboundDomainStatus(`${uniqueName("nobody")}.example`)).toBeUndefined();
    expect(await refusal(capabilities.requireOutbound(other.organizationId, domain.domain))).toEqual({
      code: "domain_not_verified",
      message: expect.stringContaining("is not a verified domain of this organization"),
    });
  });

  test("answers for the organization that holds the verification when several registered the domain", async () => {
    const [a, b] = [await app.createTenant(), await app.createTenant()];
    const domain = await verifiedDomain(b);
    const unverified = await a.request("POST", "/v1/domains", { body: { domain: domain.domain } });
    expect(unverified.status).toBe(201);
    expect(await capabilities.inboundDomainStatus(domain.domain)).toMatchObject({ organizationId: b.organizationId, admitted: true });
  });
});

describe("the DKIM signing key", () => {
  test("opens the sealed private key of the organization's domain, which pairs with the published public key", async () => {
    const tenant = await app.createTenant();
    const domain = await verifiedDomain(tenant);
    const keys = createConfiguredSigningKeys(app.db, DKIM_SECRET);
    const key = await keys.dkimKeyFor(tenant.organizationId, domain.domain);
    const dkim = domain.dnsRecords.find((r) => r.purpose === "dkim")!;
    expect(key).toEqual({ domainName: domain.domain, keySelector: dkim.name.split(".")[0], privateKey: expect.stringContaining("BEGIN PRIVATE KEY") });
    const signature = createSign("sha256").update("headers").sign(key!.privateKey);
    const publicKey = createPublicKey({ key: Buffer.from(dkim.value.split("p=")[1]!, "base64"), format: "der", type: "spki" });
    expect(createVerify("sha256").update("headers").verify(publicKey, signature)).toBe(true);
    expect(await keys.dkimKeyFor((await app.createTenant()).organizationId, domain.domain)).toBeUndefined();
  });

  test("stores the private key sealed to its own domain", async () => {
    const tenant = await app.createTenant();
    const domain = await verifiedDomain(tenant);
    const row = await app.db.fork().findOneOrFail(CustomerDomain, domain.id);
    expect(row.dkimPrivateKeyEncrypted).not.toContain("PRIVATE KEY");
    const vault = createDkimKeyVault(DKIM_SECRET);
    expect(vault.open(domain.id, row.dkimPrivateKeyEncrypted)).toContain("BEGIN PRIVATE KEY");
    expect(() => vault.open("00000000-0000-4000-8000-000000000000", row.dkimPrivateKeyEncrypted)).toThrow();
    expect(() => createDkimKeyVault("another-secret-of-at-least-thirty-two-chars").open(domain.id, row.dkimPrivateKeyEncrypted)).toThrow();
  });
});
