// The service as the sender trust tests run it: a DNS server of the file's own (DNS_SERVERS) on which senders
// publish SPF, DKIM and DMARC, an HTTPS receiver for webhooks, the app and its smtp role, started before the file's
// tests and stopped after them.
import { afterAll, beforeAll, expect } from "vitest";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { startDnsServer, type TestDnsServer } from "./dns-server.js";
import { startTestApp, uniqueName, type Tenant, type TestApp } from "./harness.js";
import { startHttpsReceiver, type HttpsReceiver } from "./https-receiver.js";

export interface SenderTrustApp {
  readonly dns: TestDnsServer;
  readonly receiver: HttpsReceiver;
  readonly app: TestApp;
  readonly smtp: SmtpRole;
}

/** The fixture; its fields are set once the file's beforeAll ran. */
export function senderTrustApp(env: Record<string, string> = {}): SenderTrustApp {
  const fixture = {} as { -readonly [K in keyof SenderTrustApp]: SenderTrustApp[K] };
  beforeAll(async () => {
    [fixture.dns, fixture.receiver] = await Promise.all([startDnsServer(), startHttpsReceiver()]);
    fixture.app = await startTestApp({ DNS_SERVERS: fixture.dns.serverList, WEBHOOK_ALLOW_HOSTS: fixture.receiver.host, ...env });
    fixture.smtp = await fixture.app.startSmtp();
  });
  afterAll(async () => {
    await fixture.app?.stop();
    await fixture.receiver?.close();
    await fixture.dns?.stop();
  });
  return fixture;
}

export async function inboxOf(tenant: Tenant, prefix = "trust"): Promise<{ id: string; address: string }> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName(prefix), displayName: "Trust" } });
  expect(res.status).toBe(201);
  return res.body;
}

/** inboundSecurity.authentication of a message stored before sender authentication, or with it switched off. */
export const NOT_EVALUATED = {
  spf: "not_evaluated",
  dkim: "not_evaluated",
  dmarc: "not_evaluated",
  arc: "not_evaluated",
  fromDomain: null,
  senderAuthenticated: false,
  dkimDomains: [],
  dmarcPolicy: null,
} as const;
