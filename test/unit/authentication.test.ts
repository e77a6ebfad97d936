// Sender authentication at receipt (src/authentication/): what each check answers in the RFC 8601 words, the
// verdict an agent reads (senderAuthenticated, replyToDiverges), and its bounds against hostile messages and a
// failing DNS. Messages are signed with mailauth's signer here (its independence is not the point of these tests;
// authentication-interop.test.ts signs with dkimpy) and checked through a real DNS server on loopback.
import { dkimSign } from "mailauth";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SenderAuthenticator } from "../../src/authentication/sender-authentication.js";
import {
  client,
  CLIENT_IP,
  plainMessage,
  publishDkimKey,
  publishDmarc,
  publishSpf,
  rsaDkimKey,
  testAuthenticator,
  uniqueDomain,
} from "../support/authentication-fixtures.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";

let dns: TestDnsServer;
let authenticator: SenderAuthenticator;
beforeAll(async () => {
  dns = await startDnsServer();
  authenticator = testAuthenticator(dns);
});
afterAll(() => dns?.stop());

async function signed(message: Buffer, domain: string, options: { selector?: string; canonicalization?: string } = {}): Promise<Buffer> {
  const key = rsaDkimKey();
  const selector = options.selector ?? "s1";
  publishDkimKey(dns, domain, selector, key);
  const { signatures } = await dkimSign(message, {
    canonicalization: options.canonicalization ?? "relaxed/relaxed",
    signatureData: [{ signingDomain: domain, selector, privateKey: key.pem }],
  });
  return Buffer.concat([Buffer.from(signatures), message]);
}

describe("an authenticated sender", () => {
  test("SPF and DKIM pass for the From domain, whose DMARC policy is reject: authenticated", async () => {
    const domain = uniqueDomain("bank");
    publishSpf(dns, domain, `v=spf1 ip4:${CLIENT_IP} -all`);
    publishDmarc(dns, domain, "v=DMARC1; p=reject");
    const message = await signed(plainMessage(`Billing <billing@${domain}>`), domain);
    const result = await authenticator.evaluate(message, client(`bounce@${domain}`));
    expect(result).toMatchObject({
      spf: "pass",
      dkim: "pass",
      dmarc: "pass",
      arc: "none",
      fromDomain: domain,
      senderAuthenticated: true,
      dkimDomains: [domain],
      dmarcPolicy: "reject",
      replyToDiverges: false,
    });
  });
});
