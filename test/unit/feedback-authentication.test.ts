// Who may complain about a recipient (a table over authenticated identities), and what DKIM and SPF authenticate a
// report as: mailauth over our own resolver against a real DNS server on loopback.
import { dkimSign } from "mailauth";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createResolver } from "../../src/dns/resolver.js";
import {
  createReportAuthenticator,
  organizationalDomain,
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
    // Yahoo's loop reports from arf.mail.yahoo.com: a yahoo.com user's provider, and a configured loop for aol.com.
    [["arf.mail.yahoo.com"], [], "reader@yahoo.com", [], "provider"],
    [["arf.mail.yahoo.com"], [], "reader@aol.com", loops, "feedback_loop"],
    [["arf.mail.yahoo.com"], [], "reader@aol.com", [], undefined],
    // Microsoft's JMRP sends as staff@hotmail.com: a hotmail.com user's provider; outlook.com only as a configured address.
    [["hotmail.com"], ["staff@hotmail.com"], "reader@hotmail.com", [], "provider"],
    [["hotmail.com"], ["staff@hotmail.com"], "reader@outlook.com", loops, "feedback_loop"],
    [["hotmail.com"], ["someone@hotmail.com"], "reader@outlook.com", loops, undefined],
    // A loop domain covers its subdomains, not its siblings or parents.
    [["reports.arf.mail.yahoo.com"], [], "reader@aol.com", loops, "feedback_loop"],
    [["mail.yahoo.com"], [], "reader@aol.com", loops, undefined],
    // The organizational domain follows the Public Suffix List, private suffixes included.
    [["mx.example.co.uk"], [], "reader@mail.example.co.uk", [], "provider"],
    [["other.co.uk"], [], "reader@example.co.uk", [], undefined],
    [["attacker.github.io"], [], "reader@victim.github.io", [], undefined],
    // Outlook.com's free mailboxes share the organizational domain of every Microsoft 365 domain's MX: not enough.
    [["outlook.com"], ["someone@outlook.com"], "reader@customer.example", [], undefined],
    [[], [], "reader@example.com", loops, undefined],
  ] as const)("identities %j %j about %s with loops %j: %s", (domains, addresses, recipient, loopList, expected) => {
    expect(vouchingFor(identities([...domains], [...addresses]), recipient, loopList)).toBe(expected);
  });

  test.each([
    ["arf.mail.yahoo.com", "yahoo.com"],
    ["Mail.Example.CO.UK.", "example.co.uk"],
    ["co.uk", null],
    ["com", null],
    ["foo.github.io", "foo.github.io"],
  ])("the organizational domain of %s is %s", (domain, org) => {
    expect(organizationalDomain(domain)).toBe(org);
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
