// Customer domains over the JSON face against a real DNS server on loopback: registration, the records to publish,
// verification of each capability with missing, wrong and failing records, the traffic view, inboxes on a
// verified domain, and tenant isolation on every route.
import { createPublicKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DomainService } from "../../gen/mailbox/v1/domain_service_pb.js";
import { CustomerDomain, Message } from "../../src/db/entities/index.js";
import { newId } from "../../src/ids.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let dns: TestDnsServer;
let app: TestApp;
beforeAll(async () => {
  dns = await startDnsServer();
  app = await startTestApp({ DNS_SERVERS: dns.serverList, DNS_TIMEOUT_MS: "150", LIMIT_DOMAINS: "3" });
});
afterAll(async () => {
  await app?.stop();
  await dns?.stop();
});

const newDomain = () => `${uniqueName("acme")}.example`;

interface PublishedRecord {
  type: string;
  purpose: string;
  name: string;
  value: string;
  priority?: number;
}

async function register(tenant: Tenant, domain = newDomain()) {
  const res = await tenant.request("POST", "/v1/domains", { body: { domain } });
  expect(res.status).toBe(201);
  return res.body as { id: string; domain: string; dnsRecords: PublishedRecord[] };
}

/** Publishes the given purposes of a domain's records as a DNS operator would (long TXT values in 255-octet strings). */
function publish(records: PublishedRecord[], purposes = ["ownership", "mx", "dkim", "spf"]) {
  for (const r of records.filter((r) => purposes.includes(r.purpose))) {
    if (r.type === "MX") dns.set(r.name, [{ type: "MX", preference: r.priority!, exchange: r.value }]);
    else dns.set(r.name, [{ type: "TXT", text: r.value.match(/.{1,255}/g)! }]);
  }
}

const record = (records: PublishedRecord[], purpose: string) => records.find((r) => r.purpose === purpose)!;

describe("registering a domain", () => {
  test("stores an IDN as punycode and returns the ownership, DKIM, MX and SPF records to publish", async () => {
    const tenant = await app.createTenant();
    const label = uniqueName("bücher");
    const res = await tenant.request("POST", "/v1/domains", { body: { domain: `${label.toUpperCase()}.Example` } });
    expect(res.status).toBe(201);
    const ascii = new URL(`http://${label}.example`).hostname;
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      domain: ascii,
      dnsRecords: [
        { type: "TXT", purpose: "ownership", name: `_mailbox-verification.${ascii}`, value: expect.stringMatching(/^mailbox-verification=[0-9a-f]{32}$/) },
        { type: "TXT", purpose: "dkim", name: expect.stringMatching(new RegExp(`^mbx[0-9a-f]{8}\\._domainkey\\.${ascii.replace(/\./g, "\\.")}$`)), value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+$/) },
        { type: "MX", purpose: "mx", name: ascii, value: "mx.agents.test", priority: 10 },
        { type: "TXT", purpose: "spf", name: ascii, value: "v=spf1 include:_spf.agents.test ~all" },
      ],
      capabilities: { inbound: false, outbound: false },
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: expect.stringMatching(ISO_MS),
    });
    const p = record(res.body.dnsRecords, "dkim").value.split("p=")[1]!;
    const key = createPublicKey({ key: Buffer.from(p, "base64"), format: "der", type: "spki" });
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
  });

  test("gives every domain its own ownership token and DKIM key", async () => {
    const tenant = await app.createTenant();
    const [a, b] = [await register(tenant), await register(tenant)];
    expect(record(a.dnsRecords, "ownership").value).not.toBe(record(b.dnsRecords, "ownership").value);
    expect(record(a.dnsRecords, "dkim").value).not.toBe(record(b.dnsRecords, "dkim").value);
  });

  test.each([
    ["192.0.2.1", "IP address"],
    ["[2001:db8::1]", "IP address"],
    ["0x7f.1", "IP address"],
    ["agents.test", "belong to the service"],
    ["mail.agents.test", "belong to the service"],
    ["localhost", "at least two labels"],
    ["printer.localhost", "special-use"],
    ["-bad.example", "inner hyphens"],
    ["under_score.example", "inner hyphens"],
    ["example.123", "not a valid internationalised domain name"],
  ])("refuses %s with 400 invalid_domain (%s)", async (domain, why) => {
    const tenant = await app.createTenant();
    const res = await tenant.request("POST", "/v1/domains", { body: { domain } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_domain", message: expect.stringContaining(why) });
  });

  test("refuses a name the organization registered already with 409 domain_exists, while another organization may register it", async () => {
    const [a, b] = [await app.createTenant(), await app.createTenant()];
    const domain = newDomain();
    await register(a, domain);
    const again = await a.request("POST", "/v1/domains", { body: { domain: domain.toUpperCase() } });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("domain_exists");
    expect((await b.request("POST", "/v1/domains", { body: { domain } })).status).toBe(201);
  });

  test("registers a name once when concurrent registrations race for it: the others answer 409 domain_exists", async () => {
    const tenant = await app.createTenant();
    const domain = newDomain();
    const answers = await Promise.all([1, 2, 3].map(() => tenant.request("POST", "/v1/domains", { body: { domain } })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409]);
    expect(answers.filter((a) => a.status === 409).map((a) => a.body.error)).toEqual(["domain_exists", "domain_exists"]);
    expect(await app.db.fork().count(CustomerDomain, { organization: tenant.organizationId })).toBe(1);
  });

  test("refuses a domain beyond platformLimits.domains with 403 domain_limit_reached", async () => {
    const tenant = await app.createTenant();
    expect((await tenant.request("GET", "/v1/me")).body.platformLimits.domains).toBe(3);
    for (let i = 0; i < 3; i++) await register(tenant);
    const res = await tenant.request("POST", "/v1/domains", { body: { domain: newDomain() } });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("domain_limit_reached");
  });

  test("refuses unknown body properties with 400", async () => {
    const tenant = await app.createTenant();
    const res = await tenant.request("POST", "/v1/domains", { body: { domain: newDomain(), verify: true } });
    expect(res.status).toBe(400);
  });
});

describe("reading domains", () => {
  test("lists domains newest first in pages of {domains, nextCursor}, and gets one as registered", async () => {
    const tenant = await app.createTenant();
    const created = [await register(tenant), await register(tenant), await register(tenant)];
    const first = await tenant.request("GET", "/v1/domains?limit=2");
    expect(first.status).toBe(200);
    expect(first.body.domains.map((d: { id: string }) => d.id)).toEqual([created[2]!.id, created[1]!.id]);
    const second = await tenant.request("GET", `/v1/domains?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body).toEqual({ domains: [expect.objectContaining({ id: created[0]!.id })], nextCursor: null });
    const got = await tenant.request("GET", `/v1/domains/${created[0]!.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(second.body.domains[0]);
    expect(got.body.dnsRecords).toEqual(created[0]!.dnsRecords);
  });
});

describe("verifying a domain", () => {
  test("fails every check while nothing is published, saying what each expected and found, with no id", async () => {
    const tenant = await app.createTenant();
    const domain = await register(tenant);
    const res = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      domain: domain.domain,
      checks: [
        { name: "ownership", recordName: `_mailbox-verification.${domain.domain}`, expected: record(domain.dnsRecords, "ownership").value, found: [], status: "failed", gates: ["inbound", "outbound"], detail: expect.stringContaining("NXDOMAIN") },
        { name: "mx", recordName: domain.domain, expected: "10 mx.agents.test", found: [], status: "failed", gates: ["inbound"], detail: expect.stringContaining("NXDOMAIN") },
        { name: "dkim", recordName: record(domain.dnsRecords, "dkim").name, expected: record(domain.dnsRecords, "dkim").value, found: [], status: "failed", gates: ["outbound"], detail: expect.any(String) },
        { name: "spf", recordName: domain.domain, expected: record(domain.dnsRecords, "spf").value, found: [], status: "failed", gates: [], detail: expect.any(String) },
      ],
      capabilities: { inbound: false, outbound: false },
      checkedAt: expect.stringMatching(ISO_MS),
    });
  });

  test("verifies inbound and outbound independently, with SPF advisory", async () => {
    const tenant = await app.createTenant();
    const domain = await register(tenant);
    publish(domain.dnsRecords, ["ownership", "mx"]);
    const inboundOnly = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    expect(inboundOnly.body.capabilities).toEqual({ inbound: true, outbound: false });
    expect(inboundOnly.body.checks.map((c: { status: string }) => c.status)).toEqual(["passed", "passed", "failed", "failed"]);
    publish(domain.dnsRecords, ["dkim"]);
    const both = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    expect(both.body.capabilities).toEqual({ inbound: true, outbound: true });
    expect(both.body.checks.find((c: { name: string }) => c.name === "spf")).toMatchObject({ status: "failed", gates: [] });
    expect((await tenant.request("GET", `/v1/domains/${domain.id}`)).body.capabilities).toEqual({ inbound: true, outbound: true });
    publish(domain.dnsRecords, ["spf"]);
    const withSpf = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    expect(withSpf.body.checks.map((c: { status: string }) => c.status)).toEqual(["passed", "passed", "passed", "passed"]);
  });

  test("fails a check whose record has the wrong value and shows what it found", async () => {
    const tenant = await app.createTenant();
    const domain = await register(tenant);
    publish(domain.dnsRecords);
    dns.set(record(domain.dnsRecords, "ownership").name, [{ type: "TXT", text: "mailbox-verification=someone-else" }]);
    dns.set(domain.domain, [{ type: "MX", preference: 5, exchange: "mx.elsewhere.example" }]);
    const res = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    expect(res.body.capabilities).toEqual({ inbound: false, outbound: false });
    expect(res.body.checks[0]).toMatchObject({ name: "ownership", status: "failed", found: ["mailbox-verification=someone-else"] });
    expect(res.body.checks[1]).toMatchObject({ name: "mx", status: "failed", found: ["5 mx.elsewhere.example"] });
    expect(res.body.checks[2]).toMatchObject({ name: "dkim", status: "passed" });
  });

  test("reports SERVFAIL and a timeout as temporary errors in the checks, not as a failed call", async () => {
    const tenant = await app.createTenant();
    const domain = await register(tenant);
    publish(domain.dnsRecords);
    dns.fail(record(domain.dnsRecords, "ownership").name, "servfail");
    dns.fail(record(domain.dnsRecords, "dkim").name, "timeout");
    const res = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    expect(res.status).toBe(200);
    expect(res.body.checks[0]).toMatchObject({ status: "temporary_error", detail: expect.stringContaining("SERVFAIL") });
    expect(res.body.checks[2]).toMatchObject({ status: "temporary_error", detail: expect.stringContaining("no answer") });
    // Never verified, so a temporary failure grants nothing.
    expect(res.body.capabilities).toEqual({ inbound: false, outbound: false });
  });

  test("lets only one organization hold a domain's verification", async () => {
    const [a, b] = [await app.createTenant(), await app.createTenant()];
    const name = newDomain();
    const first = await register(a, name);
    const second = await register(b, name);
    publish(first.dnsRecords);
    expect((await a.request("POST", `/v1/domains/${first.id}/verify`)).body.capabilities).toEqual({ inbound: true, outbound: true });
    // The DNS owner publishes b's token and key beside a's: a still holds the domain.
    dns.set(record(first.dnsRecords, "ownership").name, [
      { type: "TXT", text: record(first.dnsRecords, "ownership").value },
      { type: "TXT", text: record(second.dnsRecords, "ownership").value },
    ]);
    publish(second.dnsRecords, ["dkim"]);
    const res = await b.request("POST", `/v1/domains/${second.id}/verify`);
    expect(res.body.capabilities).toEqual({ inbound: false, outbound: false });
    expect(res.body.checks[0]).toMatchObject({ status: "failed", detail: expect.stringContaining("another organization") });
  });

  test("answers the same verification over Connect", async () => {
    const tenant = await app.createTenant();
    const domain = await register(tenant);
    publish(domain.dnsRecords);
    const res = await tenant.connect(DomainService).verifyDomain({ domainId: domain.id });
    expect(res.capabilities).toMatchObject({ inbound: true, outbound: true });
    expect(res.checks.map((c) => c.name)).toEqual(["ownership", "mx", "dkim", "spf"]);
  });
});

describe("the traffic view", () => {
  test("shows each capability's state, last check and success, the last checks, and the last day's messages", async () => {
    const tenant = await app.createTenant();
    const domain = await register(tenant);
    const before = await tenant.request("GET", `/v1/domains/${domain.id}/traffic`);
    expect(before.body).toEqual({
      domainId: domain.id,
      domain: domain.domain,
      inbound: { enabled: false, state: "unverified", lastCheckedAt: null, lastSuccessAt: null, graceUntil: null },
      outbound: { enabled: false, state: "unverified", lastCheckedAt: null, lastSuccessAt: null, graceUntil: null },
      inboundMessages24h: 0,
      outboundMessages24h: 0,
      lastChecks: [],
    });
    publish(domain.dnsRecords, ["ownership", "mx"]);
    const verified = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "desk", displayName: "Desk", domainId: domain.id } });
    expect(inbox.status).toBe(201);
    const em = app.db.fork();
    const message = (direction: string, ageMs: number) =>
      em.create(Message, {
        id: newId("msg"), organization: tenant.organizationId, inboxId: inbox.body.id, threadId: newId("thr"), direction,
        internetMessageId: `<${newId("msg")}@test>`, inReplyTo: null, references: [], from: { email: "a@b.example" }, to: [],
        replyTo: null, subject: "", text: "", html: null, metadata: {}, deliveryStatus: direction === "inbound" ? "received" : "submitted",
        submissionId: null, failureCode: null, inboundSecurity: null, attachmentsScanState: null, rawId: null, parseProblem: null,
        createdAt: new Date(Date.now() - ageMs), updatedAt: new Date(),
      });
    message("inbound", 1000);
    message("inbound", 60_000);
    message("inbound", 25 * 3_600_000);
    await em.flush();
    const after = await tenant.request("GET", `/v1/domains/${domain.id}/traffic`);
    expect(after.body).toMatchObject({
      inbound: { enabled: true, state: "verified", lastCheckedAt: verified.body.checkedAt, lastSuccessAt: verified.body.checkedAt, graceUntil: null },
      outbound: { enabled: false, state: "unverified", lastCheckedAt: verified.body.checkedAt, lastSuccessAt: null, graceUntil: null },
      inboundMessages24h: 2,
      // Outbound counts submissions sent from the domain: test/e2e/customer-domain-sending.test.ts.
      outboundMessages24h: 0,
    });
    expect(after.body.lastChecks).toEqual(verified.body.checks);
  });
});

describe("inboxes on a customer domain", () => {
  test("creates an inbox on an inbound-verified domain with domainKind customer, outside the managed allowance", async () => {
    const tenant = await app.createTenant({ managedLimit: 0 });
    const domain = await register(tenant);
    publish(domain.dnsRecords, ["ownership", "mx"]);
    await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "Support", displayName: "Support", domainId: domain.id } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      localPart: "support",
      domainId: domain.id,
      domainKind: "customer",
      domain: domain.domain,
      address: `support@${domain.domain}`,
    });
    expect((await tenant.request("GET", "/v1/me")).body.managedStarter).toEqual({ limit: 0, used: 0, remaining: 0 });
  });

  test("refuses an inbox on a domain whose inbound mail is not verified with 403 domain_not_verified", async () => {
    const tenant = await app.createTenant();
    const domain = await register(tenant);
    publish(domain.dnsRecords, ["ownership", "dkim"]);
    expect((await tenant.request("POST", `/v1/domains/${domain.id}/verify`)).body.capabilities).toEqual({ inbound: false, outbound: true });
    const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "desk", displayName: "Desk", domainId: domain.id } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "domain_not_verified", message: expect.stringContaining("inbound") });
  });
});

describe("tenant isolation", () => {
  test("answers 404 on every domain route for another organization's domain, and changes nothing", async () => {
    const [owner, other] = [await app.createTenant(), await app.createTenant()];
    const domain = await register(owner);
    publish(domain.dnsRecords);
    for (const [method, path] of [
      ["GET", `/v1/domains/${domain.id}`],
      ["POST", `/v1/domains/${domain.id}/verify`],
      ["GET", `/v1/domains/${domain.id}/traffic`],
    ] as const) {
      const res = await other.request(method, path);
      expect([method, path, res.status, res.body.error]).toEqual([method, path, 404, "not_found"]);
    }
    const inbox = await other.request("POST", "/v1/inboxes", { body: { localPart: "x", displayName: "X", domainId: domain.id } });
    expect([inbox.status, inbox.body.error]).toEqual([404, "not_found"]);
    expect((await other.request("GET", "/v1/domains")).body).toEqual({ domains: [], nextCursor: null });
    const row = await app.db.fork().findOneOrFail(CustomerDomain, domain.id);
    expect(row.lastCheckedAt).toBeNull();
    expect(row.inbound.state).toBe("unverified");
  });

  test("refuses a cursor of another organization's list with 400 invalid_cursor", async () => {
    const [a, b] = [await app.createTenant(), await app.createTenant()];
    await register(a);
    await register(a);
    const page = await a.request("GET", "/v1/domains?limit=1");
    const res = await b.request("GET", `/v1/domains?limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`);
    expect([res.status, res.body.error]).toEqual([400, "invalid_cursor"]);
  });
});
