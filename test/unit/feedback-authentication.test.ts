// Who may complain about a recipient (a table over authenticated identities), and what DKIM and SPF authenticate a
// report as: mailauth over our own resolver against a real DNS server on loopback.
import { dkimSign } from "mailauth";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createResolver } from "../../src/dns/resolver.js";
import {
  createReportAuthenticator,
  vouchingFor,
  type ReportAuthenticator,
  type ReportIdentities,
} from "../../src/outbound/feedback-authentication.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { feedbackReport, publishDkimKey, publishSpf } from "../support/feedback-report.js";
import { uniqueName } from "../support/names.js";

const identities = (domains: string[], addresses: string[] = []): ReportIdentities => ({ domains, addresses, summary: "" });

describe("who may complain about a recipient", () => {
  const loops = ["arf.mail.yahoo.com", "staff@hotmail.com"];
  test.each([
    // Yahoo's loop reports from arf.mail.yahoo.com, about yahoo.com and aol.com users alike.
    [["arf.mail.yahoo.com"], [], "reader@yahoo.com", loops, "feedback_loop"],
    [["arf.mail.yahoo.com"], [], "reader@aol.com", loops, "feedback_loop"],
    [["arf.mail.yahoo.com"], [], "reader@yahoo.com", [], undefined],
    // Microsoft's JMRP sends as staff@hotmail.com; any other hotmail.com sender is not the loop.
    [["hotmail.com"], ["staff@hotmail.com"], "reader@outlook.com", loops, "feedback_loop"],
    [["hotmail.com"], ["staff@hotmail.com"], "reader@hotmail.com", loops, "feedback_loop"],
    [["hotmail.com"], ["someone@hotmail.com"], "reader@hotmail.com", loops, undefined],
    // Another user of the recipient's provider, authenticated as its domain: not believed (every gmail.com user is).
    [["gmail.com"], ["attacker@gmail.com"], "victim@gmail.com", loops, undefined],
    [["mail.example.co.uk"], ["colleague@mail.example.co.uk"], "reader@mail.example.co.uk", loops, undefined],
    // The recipient itself, authenticated by its provider, whatever the case it was written in.
    [["gmail.com"], ["reader@gmail.com"], "Reader@Gmail.com", loops, "recipient"],
    [["gmail.com"], ["reader@gmail.com"], "reader@gmail.com", [], "recipient"],
    // A loop domain covers its subdomains, not its siblings or parents.
    [["reports.arf.mail.yahoo.com"], [], "reader@aol.com", loops, "feedback_loop"],
    [["mail.yahoo.com"], [], "reader@aol.com", loops, undefined],
    // Outlook.com's free mailboxes share the organizational domain of every Microsoft 365 domain's MX: not enough.
    [["outlook.com"], ["someone@outlook.com"], "reader@customer.example", loops, undefined],
    [[], [], "reader@example.com", loops, undefined],
  ] as const)("identities %j %j about %s with loops %j: %s", (domains, addresses, recipient, loopList, expected) => {
    expect(vouchingFor(identities([...domains], [...addresses]), recipient, loopList)).toBe(expected);
  });
});

describe("what a report is authenticated as", () => {
  let dns: TestDnsServer;
  let authenticator: ReportAuthenticator;
  beforeAll(async () => {
    dns = await startDnsServer();
    authenticator = createReportAuthenticator({ resolver: createResolver({ servers: [dns.address], timeoutMs: 300 }), hostname: "mx.agents.test" });
  });
  afterAll(() => dns?.stop());

  const session = (mailFrom: string) => ({ remoteIp: "127.0.0.1", helo: "reporter.example", mailFrom });

  /** A report from `from`, DKIM-signed with the key published for `domain` (mailauth's signer). */
  async function signed(domain: string, from: string, options: { maxBodyLength?: number; signatures?: number } = {}): Promise<Buffer> {
    const key = publishDkimKey(dns, domain);
    const body = feedbackReport({ from });
    const data = { signingDomain: domain, selector: key.keySelector, privateKey: key.privateKey, ...(options.maxBodyLength ? { maxBodyLength: options.maxBodyLength } : {}) };
    const { signatures } = await dkimSign(body, { signatureData: Array.from({ length: options.signatures ?? 1 }, () => data) } as never);
    return Buffer.concat([Buffer.from(signatures), body]);
  }

  test("an aligned DKIM signature and an SPF pass are both identities", async () => {
    const domain = `${uniqueName("provider")}.example`;
    publishSpf(dns, domain);
    const result = await authenticator.authenticate(await signed(`arf.${domain}`, `feedback@arf.${domain}`), session(`fbl@${domain}`));
    expect(result).toEqual({
      domains: [`arf.${domain}`, domain],
      addresses: [`feedback@arf.${domain}`, `fbl@${domain}`],
      summary: `dkim=pass d=arf.${domain} spf=pass smtp.mailfrom=${domain}`,
    });
  });

  test("a DKIM signature whose l= leaves part of the body unsigned authenticates nobody", async () => {
    const domain = `${uniqueName("provider")}.example`;
    const raw = await signed(domain, `feedback@${domain}`, { maxBodyLength: 20 });
    const result = await authenticator.authenticate(Buffer.concat([raw, Buffer.from("appended by someone else\r\n")]), session(""));
    expect(result.domains).toEqual([]);
    expect(result.summary).toContain(`dkim=pass d=${domain} (l= leaves body bytes unsigned)`);
  });

  test("a signature not aligned with From authenticates nobody", async () => {
    const domain = `${uniqueName("signer")}.example`;
    const result = await authenticator.authenticate(await signed(domain, "feedback@victim-provider.example"), session(""));
    expect(result.domains).toEqual([]);
    expect(result.summary).toContain("(not aligned with From)");
  });

  test("more than five DKIM signatures are not verified at all (each costs a DNS lookup)", async () => {
    const domain = `${uniqueName("many")}.example`;
    const result = await authenticator.authenticate(await signed(domain, `feedback@${domain}`, { signatures: 6 }), session(""));
    expect(result.domains).toEqual([]);
    expect(result.summary).toContain("dkim=skipped (6 signatures)");
    expect(dns.queries(`fbl._domainkey.${domain}`)).toBe(0);
  });

  test("SPF the DNS cannot answer is no identity (temperror), and so is the null reverse-path of an unlisted HELO", async () => {
    const domain = `${uniqueName("flaky")}.example`;
    dns.fail(domain, "servfail");
    const failing = await authenticator.authenticate(feedbackReport(), session(`fbl@${domain}`));
    expect(failing).toEqual({ domains: [], addresses: [], summary: `dkim=none spf=temperror smtp.mailfrom=${domain}` });
    const helo = await authenticator.authenticate(feedbackReport(), session(""));
    expect(helo).toEqual({ domains: [], addresses: [], summary: "dkim=none spf=none helo=reporter.example" });
  });
});
