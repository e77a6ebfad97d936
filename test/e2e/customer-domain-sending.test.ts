// Sending from a customer domain end to end: a verified domain's inbox and /v1/send deliver DKIM-signed mail whose
// signature mailauth verifies against the DKIM record the domain published on a real DNS server; after a DNS
// outage outlasts the grace period both routes are refused, and a fresh verification restores them.
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { dkimVerify } from "mailauth";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createConfiguredResolver } from "../../src/dns/servers.js";
import { verifiedDomain as verifiedDomainOn } from "../support/customer-domains.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

const REFRESH_MS = 1000;
const GRACE_MS = 1500;

let dns: TestDnsServer;
let sink: SmtpSink;
let app: TestApp;
let worker: { stop(): Promise<void> };

beforeAll(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink();
  app = await startTestApp({
    DNS_SERVERS: dns.serverList,
    DNS_TIMEOUT_MS: "100",
    DOMAIN_VERIFY_REFRESH: `${REFRESH_MS}ms`,
    DOMAIN_VERIFY_GRACE: `${GRACE_MS}ms`,
    SMTP_ROUTES: `*=127.0.0.1:${sink.port}`,
  });
  worker = await app.startWorker();
});
afterAll(async () => {
  await worker?.stop();
  await app?.stop();
  await sink?.stop();
  await dns?.stop();
});

const verifiedDomain = (tenant: Tenant) => verifiedDomainOn(tenant, dns);

/** mailauth's DNS lookups, answered by the test DNS server through our own resolver. */
async function dnsTxt(name: string, type: string): Promise<string[][]> {
  const resolver = createConfiguredResolver(app.config);
  const answer = type === "TXT" ? await resolver.lookup(name, "TXT") : undefined;
  if (answer?.kind !== "answer") throw Object.assign(new Error(`no ${type} for ${name}`), { code: "ENOTFOUND" });
  return answer.records.map((r) => [r]);
}

async function deliveredCopy(tenant: Tenant, submissionId: string, recipient: string): Promise<Buffer> {
  await eventually(async () => {
    const res = await tenant.request("GET", `/v1/submissions/${submissionId}`);
    return res.body.status === "delivered" ? res.body : undefined;
  });
  const copies = sink.copiesFor(recipient);
  expect(copies).toHaveLength(1);
  return copies[0]!.raw;
}

const key = () => `k-${randomBytes(8).toString("hex")}`;

describe("DKIM-signed sending from a verified customer domain", () => {
  test("an inbox on the domain and /v1/send both deliver mail signed with the domain's published key", async () => {
    const tenant = await app.createTenant();
    const domain = await verifiedDomain(tenant);
    const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "sales", displayName: "Sales", domainId: domain.id } });
    expect(inbox.status).toBe(201);

    const viaInbox = `${uniqueName("lead")}@example.org`;
    const sent = await tenant.request("POST", `/v1/inboxes/${inbox.body.id}/messages`, {
      body: { to: [{ email: viaInbox }], subject: "Offer", text: "Hello from sales" },
      headers: { "idempotency-key": key() },
    });
    expect(sent.status).toBe(202);
    expect(sent.body.message.internetMessageId).toMatch(new RegExp(`@${domain.domain.replace(/\./g, "\\.")}>$`));
    const raw = await deliveredCopy(tenant, sent.body.submission.id, viaInbox);
    const verified = await dkimVerify(raw, { resolver: dnsTxt });
    expect(verified.results[0]).toMatchObject({ signingDomain: domain.domain, status: { result: "pass" } });
    const thread = await tenant.request("GET", `/v1/threads/${sent.body.message.threadId}`);
    expect(thread.body.messages[0].delivery).toEqual({ submissionId: sent.body.submission.id, status: "delivered", failureCode: null });

    const viaSend = `${uniqueName("news")}@example.org`;
    const lowLevel = await tenant.request("POST", "/v1/send", {
      body: { from: { email: `news@${domain.domain}`, name: "News" }, to: [{ email: viaSend }], subject: "Digest", text: "This week" },
      headers: { "idempotency-key": key() },
    });
    expect(lowLevel.status).toBe(202);
    expect(lowLevel.body).toMatchObject({ replayed: false, submission: { from: { email: `news@${domain.domain}`, name: "News" }, status: "pending" } });
    expect(lowLevel.body.message).toBeUndefined();
    const raw2 = await deliveredCopy(tenant, lowLevel.body.submission.id, viaSend);
    const verified2 = await dkimVerify(raw2, { resolver: dnsTxt });
    expect(verified2.results[0]).toMatchObject({ signingDomain: domain.domain, status: { result: "pass" } });

    // The traffic view counts both sends from the domain.
    const traffic = await tenant.request("GET", `/v1/domains/${domain.id}/traffic`);
    expect(traffic.body).toMatchObject({ inboundMessages24h: 0, outboundMessages24h: 2 });
  });

  test("sending is refused once a DNS outage outlasts the grace period, and restored by a fresh verification", async () => {
    const tenant = await app.createTenant();
    const domain = await verifiedDomain(tenant);
    const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: "ops", displayName: "Ops", domainId: domain.id } });
    const sendBoth = async () => [
      await tenant.request("POST", `/v1/inboxes/${inbox.body.id}/messages`, {
        body: { to: [{ email: "someone@example.org" }], subject: "s", text: "t" },
        headers: { "idempotency-key": key() },
      }),
      await tenant.request("POST", "/v1/send", {
        body: { from: { email: `ops@${domain.domain}` }, to: [{ email: "someone@example.org" }], subject: "s", text: "t" },
        headers: { "idempotency-key": key() },
      }),
    ];
    expect((await sendBoth()).map((r) => r.status)).toEqual([202, 202]);

    for (const r of domain.dnsRecords) dns.fail(r.name, "servfail");
    await sleep(REFRESH_MS + 100);
    // The first use after the refresh age re-checks, meets SERVFAIL, and starts the grace period: still allowed.
    expect((await sendBoth()).map((r) => r.status)).toEqual([202, 202]);
    await sleep(GRACE_MS + 100);
    const refused = await sendBoth();
    expect(refused.map((r) => [r.status, r.body.error])).toEqual([
      [403, "domain_not_verified"],
      [403, "domain_not_verified"],
    ]);

    for (const r of domain.dnsRecords) dns.clearFailure(r.name);
    const fresh = await tenant.request("POST", `/v1/domains/${domain.id}/verify`);
    expect(fresh.body.capabilities).toEqual({ inbound: true, outbound: true });
    expect((await sendBoth()).map((r) => r.status)).toEqual([202, 202]);
  });
});
