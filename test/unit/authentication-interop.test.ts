// The sender authentication against an independent implementation: messages signed and ARC-sealed by dkimpy
// (installed from PyPI at test time), verified by the service's evaluation path over a real DNS server on loopback.
// DKIM: RSA-SHA256 and Ed25519-SHA256 (RFC 8463), relaxed and simple canonicalization, and tampered copies.
// DMARC (RFC 7489): relaxed and strict alignment, the organizational domain below a multi-label public suffix,
// p=reject with a forged From, sp= for subdomains. ARC (RFC 8617): a forwarded message with an intact chain, and
// chains broken after sealing.
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, test } from "vitest";
import type { SenderAuthentication } from "../../src/authentication/sender-authentication.js";
import {
  client,
  CLIENT_IP,
  ed25519DkimKey,
  plainMessage,
  publishDkimKey,
  publishDmarc,
  publishSpf,
  rsaDkimKey,
  uniqueDomain,
  type DkimKey,
  authenticationFixture,
} from "../support/authentication-fixtures.js";
import { dkimpy, type DkimpyJob } from "../support/mail-authentication-interop.js";

const fixture = authenticationFixture();

/** Signs with dkimpy (one python process for all of them) and puts each signature on top of its message. */
async function signAll(requests: readonly { message: Buffer; domain: string; key: DkimKey; selector?: string; canonicalize?: ["relaxed" | "simple", "relaxed" | "simple"] }[]): Promise<Buffer[]> {
  const jobs: DkimpyJob[] = requests.map((r) => {
    const selector = r.selector ?? "sel1";
    publishDkimKey(fixture.dns, r.domain, selector, r.key);
    return { op: "sign", message: r.message, domain: r.domain, selector, key: r.key.dkimpyKey, algorithm: r.key.algorithm, canonicalize: r.canonicalize ?? ["relaxed", "relaxed"] };
  });
  const headers = await dkimpy(jobs);
  return requests.map((r, i) => Buffer.concat([Buffer.from(headers[i]!), r.message]));
}

/** The first occurrence of `from` in the message replaced: a copy changed after signing. */
function tampered(message: Buffer, from: string, to: string): Buffer {
  const text = message.toString("latin1");
  expect(text).toContain(from);
  return Buffer.from(text.replace(from, to), "latin1");
}

describe("DKIM signatures made by dkimpy", () => {
  const cases = [
    ["rsa-sha256", ["relaxed", "relaxed"]],
    ["rsa-sha256", ["relaxed", "simple"]],
    ["rsa-sha256", ["simple", "relaxed"]],
    ["rsa-sha256", ["simple", "simple"]],
    ["ed25519-sha256", ["relaxed", "relaxed"]],
    ["ed25519-sha256", ["simple", "simple"]],
  ] as const;
  const domains = cases.map(() => uniqueDomain("signer"));
  let signed: Buffer[];
  beforeAll(async () => {
    for (const domain of domains) publishDmarc(fixture.dns, domain, "v=DMARC1; p=reject");
    signed = await signAll(
      cases.map(([algorithm, canonicalize], i) => ({
        // Whitespace the relaxed canonicalizations fold and the simple ones keep.
        message: plainMessage(`Billing   <billing@${domains[i]}>`, { body: "Invoice  42 \t attached.\r\n\r\nThanks,\r\nBilling\r\n\r\n" }),
        domain: domains[i]!,
        key: algorithm === "ed25519-sha256" ? ed25519DkimKey() : rsaDkimKey(),
        canonicalize: [...canonicalize],
      })),
    );
  });

  test.each(cases.map((c, i) => [...c, i] as const))("%s %j verifies, authenticates the From domain, and a tampered copy fails", async (_algorithm, _canonicalize, i) => {
    const domain = domains[i]!;
    const result = await fixture.authenticator.evaluate(signed[i]!, client(`bounce@${uniqueDomain("nospf")}`));
    expect(result).toMatchObject({ dkim: "pass", dkimDomains: [domain], dmarc: "pass", senderAuthenticated: true, fromDomain: domain, dmarcPolicy: "reject" });

    const body = await fixture.authenticator.evaluate(tampered(signed[i]!, "Invoice  42", "Invoice  43"), client(""));
    expect(body).toMatchObject({ dkim: "fail", dkimDomains: [], dmarc: "fail", senderAuthenticated: false });
    const header = await fixture.authenticator.evaluate(tampered(signed[i]!, "Subject: Your invoice", "Subject: Your lnvoice"), client(""));
    expect(header).toMatchObject({ dkim: "fail", dkimDomains: [], dmarc: "fail", senderAuthenticated: false });
  });

  test("a message dkimpy signed with bare LF line endings verifies as the CRLF message it stands for", async () => {
    const domain = uniqueDomain("lf");
    publishDmarc(fixture.dns, domain, "v=DMARC1; p=none");
    const message = Buffer.from(plainMessage(`a@${domain}`, { body: "line one  \r\nline two\r\n" }).toString().replaceAll("\r\n", "\n"));
    const [signed] = await signAll([{ message, domain, key: rsaDkimKey(), canonicalize: ["simple", "simple"] }]);
    const lf = Buffer.from(signed!.toString().replaceAll("\r\n", "\n"));
    expect(lf.includes("\r")).toBe(false);
    expect(await fixture.authenticator.evaluate(lf!, client(""))).toMatchObject({ dkim: "pass", dmarc: "pass", senderAuthenticated: true });
  });

  test("a signature whose key is not published is neutral (no key), not a pass", async () => {
    const domain = uniqueDomain("nokey");
    const [message] = await signAll([{ message: plainMessage(`a@${domain}`), domain, key: rsaDkimKey() }]);
    fixture.dns.remove(`sel1._domainkey.${domain}`);
    expect(await fixture.authenticator.evaluate(message!, client(""))).toMatchObject({ dkim: "neutral", dkimDomains: [], senderAuthenticated: false });
  });
});

describe("DMARC over dkimpy's signatures and SPF", () => {
  test("relaxed alignment: a signature of the organizational domain authenticates From at a subdomain (policy: sp, else p)", async () => {
    const org = uniqueDomain("relaxed");
    publishDmarc(fixture.dns, org, "v=DMARC1; p=quarantine");
    const [message] = await signAll([{ message: plainMessage(`news@mail.${org}`), domain: org, key: rsaDkimKey() }]);
    expect(await fixture.authenticator.evaluate(message!, client(""))).toMatchObject({
      dkim: "pass",
      dmarc: "pass",
      fromDomain: `mail.${org}`,
      senderAuthenticated: true,
      dmarcPolicy: "quarantine",
    });
  });

  test("strict alignment (adkim=s, aspf=s): the same signature and an SPF pass of the parent do not align", async () => {
    const org = uniqueDomain("strict");
    publishDmarc(fixture.dns, org, "v=DMARC1; p=reject; adkim=s; aspf=s");
    publishSpf(fixture.dns, org, `v=spf1 ip4:${CLIENT_IP} -all`);
    const [message] = await signAll([{ message: plainMessage(`news@mail.${org}`), domain: org, key: rsaDkimKey() }]);
    const result = await fixture.authenticator.evaluate(message!, client(`bounce@${org}`));
    expect(result).toMatchObject({ spf: "pass", dkim: "pass", dkimDomains: [org], dmarc: "fail", senderAuthenticated: false, dmarcPolicy: "reject" });
    // Strict alignment passes on the very From domain.
    const [exact] = await signAll([{ message: plainMessage(`news@${org}`), domain: org, key: rsaDkimKey() }]);
    expect(await fixture.authenticator.evaluate(exact!, client(""))).toMatchObject({ dmarc: "pass", senderAuthenticated: true });
  });

  test("below a multi-label public suffix (co.uk) the organizational domain is the registered name, not co.uk", async () => {
    const shop = `shop-${randomBytes(4).toString("hex")}.co.uk`;
    const other = `other-${randomBytes(4).toString("hex")}.co.uk`;
    publishDmarc(fixture.dns, shop, "v=DMARC1; p=reject");
    const [own, sibling] = await signAll([
      { message: plainMessage(`orders@mail.${shop}`), domain: shop, key: rsaDkimKey() },
      { message: plainMessage(`orders@mail.${shop}`), domain: other, key: rsaDkimKey() },
    ]);
    expect(await fixture.authenticator.evaluate(own!, client(""))).toMatchObject({ dmarc: "pass", fromDomain: `mail.${shop}`, senderAuthenticated: true });
    // Another registrant under the same public suffix signs: relaxed alignment does not reach across co.uk.
    expect(await fixture.authenticator.evaluate(sibling!, client(""))).toMatchObject({ dkim: "pass", dkimDomains: [other], dmarc: "fail", senderAuthenticated: false });
  });

  test("p=reject and a forged From: SPF and DKIM pass for the forger's domain, DMARC fails, the sender is not authenticated", async () => {
    const bank = uniqueDomain("bank");
    const forger = uniqueDomain("forger");
    publishDmarc(fixture.dns, bank, "v=DMARC1; p=reject; rua=mailto:dmarc@bank.example");
    publishSpf(fixture.dns, bank, "v=spf1 ip4:198.51.100.0/24 -all");
    publishSpf(fixture.dns, forger, `v=spf1 ip4:${CLIENT_IP} -all`);
    const [message] = await signAll([
      { message: plainMessage(`"Bank billing" <billing@${bank}>`, { headers: [`Reply-To: <pay@${forger}>`] }), domain: forger, key: rsaDkimKey() },
    ]);
    const result = await fixture.authenticator.evaluate(message!, client(`bounce@${forger}`));
    expect(result).toEqual({
      spf: "pass",
      dkim: "pass",
      dmarc: "fail",
      arc: "none",
      fromDomain: bank,
      senderAuthenticated: false,
      dkimDomains: [forger],
      dmarcPolicy: "reject",
      // Only against an authenticated From: this one is not, which is the warning.
      replyToDiverges: false,
      summary: expect.any(String),
    } satisfies Record<keyof SenderAuthentication, unknown>);
  });

  test("sp= is the policy of the organization's subdomains; p its own", async () => {
    const corp = uniqueDomain("corp");
    publishDmarc(fixture.dns, corp, "v=DMARC1; p=none; sp=reject");
    const unsigned = (from: string) => fixture.authenticator.evaluate(plainMessage(from), client(""));
    expect(await unsigned(`alerts@eu.${corp}`)).toMatchObject({ dmarc: "fail", dmarcPolicy: "reject", senderAuthenticated: false });
    expect(await unsigned(`alerts@${corp}`)).toMatchObject({ dmarc: "fail", dmarcPolicy: "none", senderAuthenticated: false });
    // A subdomain's own record wins over the organization's.
    publishDmarc(fixture.dns, `own.${corp}`, "v=DMARC1; p=quarantine");
    expect(await unsigned(`alerts@own.${corp}`)).toMatchObject({ dmarc: "fail", dmarcPolicy: "quarantine" });
  });
});

describe("ARC: a forwarded message sealed by dkimpy", () => {
  /**
   * The author signs; a mailing list checks it (Authentication-Results under its authserv-id), tags the subject and
   * adds a footer (which breaks the author's signature), seals the message (ARC i=1) and sends it from its own
   * address and bounce domain. `hops` = 2: a second forwarder checks the chain (arc=pass) and seals i=2.
   */
  async function forwarded(hops: 1 | 2): Promise<{ message: Buffer; author: string; lists: string[] }> {
    const author = uniqueDomain("author");
    publishDmarc(fixture.dns, author, "v=DMARC1; p=reject");
    const [original] = await signAll([{ message: plainMessage(`Ann <ann@${author}>`, { subject: "Meeting notes" }), domain: author, key: rsaDkimKey() }]);
    let message = original!;
    const lists: string[] = [];
    for (let hop = 1; hop <= hops; hop++) {
      const list = uniqueDomain(`list${hop}`);
      lists.push(list);
      publishDkimKey(fixture.dns, list, "arc", rsaDkimKey());
      const srvId = `mx.${list}`;
      const results =
        hop === 1
          ? `Authentication-Results: ${srvId}; dkim=pass header.d=${author}; spf=pass smtp.mailfrom=${author}; dmarc=pass header.from=${author}\r\n`
          : `Authentication-Results: ${srvId}; arc=pass; dkim=fail header.d=${author}; spf=pass smtp.mailfrom=${lists[0]}\r\n`;
      const edited = hop === 1 ? tampered(message, "Subject: Meeting notes", "Subject: [team] Meeting notes") : message;
      const withFooter = hop === 1 ? Buffer.concat([edited, Buffer.from(`--\r\nteam mailing list at ${list}\r\n`)]) : edited;
      const toSeal = Buffer.concat([Buffer.from(results), withFooter]);
      const [seal] = await dkimpy([{ op: "arc_sign", message: toSeal, domain: list, selector: "arc", key: rsaDkimKey().dkimpyKey, srvId }]);
      expect(seal).toContain(`ARC-Seal: i=${hop}`);
      message = Buffer.concat([Buffer.from(seal!), toSeal]);
    }
    publishSpf(fixture.dns, lists.at(-1)!, `v=spf1 ip4:${CLIENT_IP} -all`);
    return { message, author, lists };
  }

  test("an intact chain of one set is arc=pass; the author's signature broken by the list is a DMARC fail all the same", async () => {
    const { message, author, lists } = await forwarded(1);
    const result = await fixture.authenticator.evaluate(message, client(`bounce@${lists[0]}`));
    expect(result).toMatchObject({ arc: "pass", dkim: "fail", spf: "pass", dmarc: "fail", fromDomain: author, senderAuthenticated: false });
  });

  test("an intact chain of two sets is arc=pass", async () => {
    const { message, lists } = await forwarded(2);
    expect(await fixture.authenticator.evaluate(message, client(`bounce@${lists[1]}`))).toMatchObject({ arc: "pass" });
  });

  test("a chain broken after sealing is arc=fail: the body changed, or the sealed results rewritten", async () => {
    const { message, lists } = await forwarded(1);
    const body = tampered(message, "team mailing list", "team mailing lisp");
    expect(await fixture.authenticator.evaluate(body, client(`bounce@${lists[0]}`))).toMatchObject({ arc: "fail" });
    const results = tampered(message, "ARC-Authentication-Results: i=1; mx.", "ARC-Authentication-Results: i=1; mX.");
    expect(await fixture.authenticator.evaluate(results, client(`bounce@${lists[0]}`))).toMatchObject({ arc: "fail" });
  });

  test("a seal whose key lookup fails temporarily is arc=temperror, not a broken chain", async () => {
    const { message, lists } = await forwarded(1);
    fixture.dns.fail(`arc._domainkey.${lists[0]}`, "servfail");
    expect(await fixture.authenticator.evaluate(message, client(`bounce@${lists[0]}`))).toMatchObject({ arc: "temperror" });
  });
});
