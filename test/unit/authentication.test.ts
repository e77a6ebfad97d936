// Sender authentication at receipt (src/authentication/): what each check answers in the RFC 8601 words, the
// verdict an agent reads (senderAuthenticated, replyToDiverges), and its bounds against hostile messages and a
// failing DNS. Messages are signed with mailauth's signer here (its independence is not the point of these tests;
// authentication-interop.test.ts signs with dkimpy) and checked through a real DNS server on loopback.
import { dkimSign } from "mailauth";
import { describe, expect, test } from "vitest";
import { MAX_BODY_LINE_BYTES, MAX_DKIM_SIGNATURES } from "../../src/authentication/sender-authentication.js";
import { ConfigError, loadConfig } from "../../src/config.js";
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
  authenticationFixture,
} from "../support/authentication-fixtures.js";

const fixture = authenticationFixture();

async function signed(
  message: Buffer,
  domain: string,
  options: { selector?: string; canonicalization?: string; algorithm?: string; maxBodyLength?: number } = {},
): Promise<Buffer> {
  const key = rsaDkimKey();
  const selector = options.selector ?? "s1";
  publishDkimKey(fixture.dns, domain, selector, key);
  const { signatures } = await dkimSign(message, {
    canonicalization: options.canonicalization ?? "relaxed/relaxed",
    ...(options.algorithm ? { algorithm: options.algorithm } : {}),
    signatureData: [{ signingDomain: domain, selector, privateKey: key.pem, ...(options.maxBodyLength === undefined ? {} : { maxBodyLength: options.maxBodyLength }) }],
  } as never);
  return Buffer.concat([Buffer.from(signatures), message]);
}

/** A DKIM-signed From domain with a DMARC policy: its mail is authenticated. */
async function authenticatedMessage(
  options: { headers?: (domain: string) => string[]; body?: string; canonicalization?: string } = {},
): Promise<{ domain: string; message: Buffer }> {
  const domain = uniqueDomain("sender");
  publishDmarc(fixture.dns, domain, "v=DMARC1; p=reject");
  const { headers, ...rest } = options;
  const message = await signed(plainMessage(`Sender <news@${domain}>`, { ...rest, headers: headers?.(domain) ?? [] }), domain, rest);
  return { domain, message };
}

/** The message as a stream of `size`-byte chunks. */
async function* inChunks(message: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < message.length; at += size) yield message.subarray(at, at + size);
}

/**
 * The work's result, the wall time it took and the CPU time this process used meanwhile (all threads; the file runs
 * alone in its process). Work bounded by what it computes is bounded by `cpuMs`, which a busy machine does not
 * stretch as it does wall time; work bounded by a deadline (the budget) by `ms`.
 */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number; cpuMs: number }> {
  const start = performance.now();
  const cpu = process.cpuUsage();
  const value = await work();
  const used = process.cpuUsage(cpu);
  return { value, ms: performance.now() - start, cpuMs: (used.user + used.system) / 1000 };
}

describe("an authenticated sender", () => {
  test("SPF and DKIM pass for the From domain, whose DMARC policy is reject: authenticated", async () => {
    const domain = uniqueDomain("bank");
    publishSpf(fixture.dns, domain, `v=spf1 ip4:${CLIENT_IP} -all`);
    publishDmarc(fixture.dns, domain, "v=DMARC1; p=reject");
    const message = await signed(plainMessage(`Billing <billing@${domain}>`), domain);
    const result = await fixture.authenticator.evaluate(message, client(`bounce@${domain}`));
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

describe("the verdict", () => {
  test("unsigned mail from a domain without SPF or DMARC records: none, none, none, not authenticated", async () => {
    const domain = uniqueDomain("plain");
    const result = await fixture.authenticator.evaluate(plainMessage(`someone@${domain}`), client(`someone@${domain}`));
    expect(result).toMatchObject({ spf: "none", dkim: "none", dmarc: "none", arc: "none", fromDomain: domain, senderAuthenticated: false, dkimDomains: [], dmarcPolicy: null });
  });

  test("an aligned DKIM pass without a DMARC record is not an authenticated sender: DMARC has nothing to pass (none)", async () => {
    const domain = uniqueDomain("norecord");
    const result = await fixture.authenticator.evaluate(await signed(plainMessage(`a@${domain}`), domain), client(""));
    expect(result).toMatchObject({ dkim: "pass", dkimDomains: [domain], dmarc: "none", senderAuthenticated: false });
  });

  test("an SPF pass of an aligned MAIL FROM alone authenticates (no signature)", async () => {
    const domain = uniqueDomain("spfonly");
    publishSpf(fixture.dns, `bounces.${domain}`, `v=spf1 ip4:${CLIENT_IP} -all`);
    publishDmarc(fixture.dns, domain, "v=DMARC1; p=quarantine");
    const result = await fixture.authenticator.evaluate(plainMessage(`a@${domain}`), client(`b@bounces.${domain}`));
    expect(result).toMatchObject({ spf: "pass", dkim: "none", dmarc: "pass", senderAuthenticated: true, dmarcPolicy: "quarantine" });
  });

  test("an IPv6 client and a null reverse-path: SPF checks the HELO name (RFC 7208 §2.4)", async () => {
    const helo = `mta.${uniqueDomain("helo")}`;
    publishSpf(fixture.dns, helo, "v=spf1 ip6:2001:db8::/32 -all");
    expect((await fixture.authenticator.evaluate(plainMessage("a@x.example"), client("", helo, "2001:db8::25"))).spf).toBe("pass");
    expect((await fixture.authenticator.evaluate(plainMessage("a@x.example"), client("", helo, "2001:db9::25"))).spf).toBe("fail");
  });

  test.each([
    ["a Reply-To of another organization", (d: string) => [`Reply-To: payments@elsewhere-${d}`], true],
    ["a Reply-To in a subdomain of the From domain", (d: string) => [`Reply-To: Help <help@support.${d}>`], false],
    ["one Reply-To address of the organization and one outside it", (d: string) => [`Reply-To: a@${d}, b@other-${d}`], true],
    ["a Reply-To address without a domain name", () => ["Reply-To: a@[192.0.2.1]"], true],
    ["no Reply-To", () => [], false],
  ])("replyToDiverges of an authenticated From with %s: %s", async (_what, headers, diverges) => {
    const { message } = await authenticatedMessage({ headers });
    const result = await fixture.authenticator.evaluate(message, client(""));
    expect(result).toMatchObject({ senderAuthenticated: true, replyToDiverges: diverges });
  });

  test("the From domain is reported in lower-case A-labels, and its DMARC record looked up under that name", async () => {
    const label = uniqueDomain("bücher").replace(/\.example$/, "");
    const ascii = new URL(`http://${label}.example`).hostname;
    expect(ascii).toMatch(/^xn--/);
    publishDmarc(fixture.dns, ascii, "v=DMARC1; p=reject");
    const message = Buffer.from(`From: =?utf-8?q?B=C3=BCcher?= <Info@${label.toUpperCase()}.EXAMPLE>\r\nSubject: x\r\n\r\nbody\r\n`);
    expect(await fixture.authenticator.evaluate(message, client(""))).toMatchObject({ fromDomain: ascii, dmarc: "fail", dmarcPolicy: "reject" });
  });

  test.each([
    ["no From field", "To: a@b.example\r\n"],
    ["two From fields", "From: a@one.example\r\nFrom: a@two.example\r\n"],
    ["a From of two domains", "From: a@one.example, b@two.example\r\n"],
    ["a From without an address", "From: undisclosed-recipients:;\r\n"],
  ])("%s: DMARC cannot be applied (permerror), no From domain, not authenticated", async (_what, headers) => {
    const result = await fixture.authenticator.evaluate(Buffer.from(`${headers}Subject: x\r\n\r\nbody\r\n`), client(""));
    expect(result).toMatchObject({ dmarc: "permerror", fromDomain: null, senderAuthenticated: false, dmarcPolicy: null });
  });

  test("a signature whose l= leaves body bytes unsigned is policy, not a pass: what was appended is not the signer's", async () => {
    const domain = uniqueDomain("length");
    publishDmarc(fixture.dns, domain, "v=DMARC1; p=reject");
    const message = await signed(plainMessage(`a@${domain}`, { body: "Hello\r\n" }), domain, { maxBodyLength: 7 });
    const appended = Buffer.concat([message, Buffer.from("Pay to IBAN XX00 0000 0000 instead.\r\n")]);
    expect(await fixture.authenticator.evaluate(appended, client(""))).toMatchObject({ dkim: "policy", dkimDomains: [], dmarc: "fail", senderAuthenticated: false });
    // Nothing appended: the same signature covers the whole body and passes.
    expect(await fixture.authenticator.evaluate(message, client(""))).toMatchObject({ dkim: "pass", senderAuthenticated: true });
  });

  test("an rsa-sha1 signature is policy (RFC 8301: not valid for verifying)", async () => {
    const domain = uniqueDomain("sha1");
    const message = await signed(plainMessage(`a@${domain}`), domain, { algorithm: "rsa-sha1" });
    expect(await fixture.authenticator.evaluate(message, client(""))).toMatchObject({ dkim: "policy", dkimDomains: [] });
  });

  test("a DKIM-Signature field that cannot be processed at all (no d=) is neutral: signed, not verifiable", async () => {
    const message = Buffer.concat([Buffer.from("DKIM-Signature: v=1; a=rsa-sha256; s=x; h=from; bh=; b=\r\n"), plainMessage("a@b.example")]);
    expect(await fixture.authenticator.evaluate(message, client(""))).toMatchObject({ dkim: "neutral", dkimDomains: [] });
  });

  test("a message in chunks (even split inside the header section's end) gives what the whole message gives", async () => {
    // The budget is not under test here: a machine under load must not turn a slow split into a temperror.
    const unhurried = testAuthenticator(fixture.dns, { budgetMs: 120_000, dnsTimeoutMs: 5_000 });
    for (const lines of [2_000, 50_000]) {
      const { message } = await authenticatedMessage({ headers: (d) => [`Reply-To: x@other-${d}`], body: "line\n".repeat(lines) });
      const whole = await unhurried.evaluate(message, client(""));
      expect(whole).toMatchObject({ dkim: "pass", senderAuthenticated: true, replyToDiverges: true });
      const end = message.indexOf("\r\n\r\n");
      // Byte-sized chunks over the short body; splits at the header section's end and large chunks over the long one.
      const sizes = lines === 2_000 ? [1, 7] : [end + 1, end + 3, 256 * 1024];
      for (const size of sizes) {
        expect(await unhurried.evaluate(inChunks(message, size), client("")), `chunks of ${size}, ${lines} lines`).toEqual(whole);
      }
    }
  });
  test("a streamed message whose body is not needed (unsigned) has its source let go all the same", async () => {
    let released = false;
    async function* source(): AsyncGenerator<Uint8Array> {
      try {
        yield plainMessage("a@b.example", { body: "x\r\n".repeat(100_000) });
        yield Buffer.from("more\r\n");
      } finally {
        released = true;
      }
    }
    expect(await fixture.authenticator.evaluate(source(), client(""))).toMatchObject({ dkim: "none" });
    await expect.poll(() => released, { timeout: 10_000 }).toBe(true);
  });
});

describe("bounds against hostile messages", () => {
  test(`thousands of DKIM-Signature fields: ${MAX_DKIM_SIGNATURES} are verified (the aligned one among them), one key lookup each at most`, async () => {
    const { domain, message } = await authenticatedMessage();
    const junk = Array.from({ length: 3000 }, (_, i) => `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=junk${i}.example; s=s${i}; h=from; bh=AAAA; b=AAAA\r\n`);
    // On top, as a later hop would add them; the author's signature is the lowest.
    const hostile = Buffer.concat([Buffer.from(junk.join("")), message]);
    const { value: result, cpuMs } = await timed(() => fixture.authenticator.evaluate(hostile, client("")));
    expect(result).toMatchObject({ dkim: "pass", dkimDomains: [domain], senderAuthenticated: true });
    const keyLookups = Array.from({ length: 3000 }, (_, i) => fixture.dns.queries(`s${i}._domainkey.junk${i}.example`)).reduce((a, b) => a + b, 0);
    expect(keyLookups).toBeLessThanOrEqual(MAX_DKIM_SIGNATURES - 1);
    expect(cpuMs).toBeLessThan(2000);
  });

  test("a header section over the bound is not read further: DKIM, DMARC and ARC permerror, SPF still evaluated", async () => {
    const small = testAuthenticator(fixture.dns, { maxHeaderBytes: 64 * 1024 });
    const domain = uniqueDomain("huge");
    publishSpf(fixture.dns, domain, `v=spf1 ip4:${CLIENT_IP} -all`);
    const header = `From: a@${domain}\r\n` + `X-Filler: ${"x".repeat(900)}\r\n`.repeat(100);
    let pulled = 0;
    async function* stream(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 10_000; i++) {
        pulled++;
        yield Buffer.from(i === 0 ? header : `X-More: ${"y".repeat(1000)}\r\n`);
      }
    }
    const result = await small.evaluate(stream(), client(`a@${domain}`));
    expect(result).toMatchObject({ spf: "pass", dkim: "permerror", dmarc: "permerror", arc: "permerror", fromDomain: null, senderAuthenticated: false });
    expect(pulled).toBeLessThan(100);
  });

  test(`a body line over ${MAX_BODY_LINE_BYTES / 1024} KiB stops DKIM at once (permerror) instead of seconds of relaxed hashing`, async () => {
    // A relaxed signature makes mailauth hash the body; whether it would verify does not matter here.
    const { domain, message } = await authenticatedMessage();
    const signature = message.subarray(0, message.indexOf("\r\nFrom:") + 2);
    const body = "x".repeat(8 * 1024 * 1024);
    const hostile = Buffer.concat([signature, plainMessage(`news@${domain}`, { body })]);
    const { value, cpuMs } = await timed(() => fixture.authenticator.evaluate(hostile, client("")));
    // Not verifiable is not forged: DMARC cannot conclude either (permerror, not fail under p=reject).
    expect(value).toMatchObject({ dkim: "permerror", dmarc: "permerror", dmarcPolicy: "reject", senderAuthenticated: false });
    // mailauth alone takes about 16 s over this body (measured); a few chunks are read here.
    expect(cpuMs).toBeLessThan(1000);
    // A smaller body is checked in one piece: the same answer.
    const small = Buffer.concat([signature, plainMessage(`news@${domain}`, { body: "x".repeat(MAX_BODY_LINE_BYTES + 1) })]);
    expect(await fixture.authenticator.evaluate(small, client(""))).toMatchObject({ dkim: "permerror", dmarc: "permerror" });
    // Unsigned, the same body is not read at all.
    const unsigned = await timed(() => fixture.authenticator.evaluate(plainMessage(`news@${domain}`, { body }), client("")));
    expect(unsigned.value).toMatchObject({ dkim: "none", dmarc: "fail", senderAuthenticated: false });
    expect(unsigned.cpuMs).toBeLessThan(1000);
  });

  test("a body of bare LFs verifies at the cost of CRLF (mailauth alone writes each line separately: seconds per MB)", async () => {
    const { message } = await authenticatedMessage({ body: "a\r\n".repeat(2 * 1024 * 1024) });
    const end = message.indexOf("\r\n\r\n") + 4;
    const bareLf = Buffer.concat([message.subarray(0, end), Buffer.from(message.subarray(end).toString().replaceAll("\r\n", "\n"))]);
    const { value, cpuMs } = await timed(() => fixture.authenticator.evaluate(bareLf, client("")));
    expect(value).toMatchObject({ dkim: "pass", senderAuthenticated: true });
    expect(cpuMs).toBeLessThan(2000);
  });

  test("an SPF record with more than 10 DNS-querying terms (an include chain) is permerror after 10 lookups", async () => {
    const domain = uniqueDomain("includes");
    for (let i = 0; i < 20; i++) publishSpf(fixture.dns, `i${i}.${domain}`, `v=spf1 include:i${i + 1}.${domain} -all`);
    publishSpf(fixture.dns, domain, `v=spf1 include:i0.${domain} -all`);
    const result = await fixture.authenticator.evaluate(plainMessage(`a@${domain}`), client(`a@${domain}`));
    expect(result.spf).toBe("permerror");
    const asked = Array.from({ length: 20 }, (_, i) => fixture.dns.queries(`i${i}.${domain}`)).reduce((a, b) => a + b, 0);
    expect(asked).toBeLessThanOrEqual(10);
  });

  test("more than two void lookups are permerror (RFC 7208 §4.6.4)", async () => {
    const domain = uniqueDomain("void");
    publishSpf(fixture.dns, domain, `v=spf1 a:n1.${domain} a:n2.${domain} a:n3.${domain} a:n4.${domain} -all`);
    expect((await fixture.authenticator.evaluate(plainMessage(`a@${domain}`), client(`a@${domain}`))).spf).toBe("permerror");
    expect(fixture.dns.queries(`n4.${domain}`)).toBe(0);
  });
});

describe("a failing DNS", () => {
  test("no answer at all: temperror everywhere within the budget, whatever the DNS timeout", async () => {
    const slow = testAuthenticator(fixture.dns, { budgetMs: 600, dnsTimeoutMs: 20_000 });
    const domain = uniqueDomain("silent");
    for (const name of [domain, `_dmarc.${domain}`, `s1._domainkey.${domain}`]) fixture.dns.fail(name, "timeout");
    const message = await signed(plainMessage(`a@${domain}`), domain);
    fixture.dns.fail(`s1._domainkey.${domain}`, "timeout");
    const { value, ms } = await timed(() => slow.evaluate(message, client(`a@${domain}`)));
    expect(value).toMatchObject({ spf: "temperror", dkim: "temperror", dmarc: "temperror", fromDomain: domain, senderAuthenticated: false });
    expect(ms).toBeGreaterThanOrEqual(550);
    expect(ms).toBeLessThan(1500);
  });

  test("a key lookup that fails (SERVFAIL) under a DMARC policy: dkim temperror, and DMARC temperror rather than fail", async () => {
    const domain = uniqueDomain("servfail");
    publishDmarc(fixture.dns, domain, "v=DMARC1; p=reject");
    const message = await signed(plainMessage(`a@${domain}`), domain);
    fixture.dns.fail(`s1._domainkey.${domain}`, "servfail");
    expect(await fixture.authenticator.evaluate(message, client(""))).toMatchObject({ dkim: "temperror", dmarc: "temperror", senderAuthenticated: false, dmarcPolicy: "reject" });
  });

  test("a source that fails while the header or the body is read: temperror, and SPF (which needs neither) still answers", async () => {
    const { domain, message } = await authenticatedMessage();
    publishSpf(fixture.dns, domain, `v=spf1 ip4:${CLIENT_IP} -all`);
    const end = message.indexOf("\r\n\r\n") + 4;
    async function* failing(after: number): AsyncGenerator<Uint8Array> {
      yield message.subarray(0, after);
      throw new Error("the chunk could not be read");
    }
    expect(await fixture.authenticator.evaluate(failing(end - 10), client(`a@${domain}`))).toMatchObject({
      spf: "pass",
      dkim: "temperror",
      dmarc: "temperror",
      fromDomain: null,
      senderAuthenticated: false,
    });
    expect(await fixture.authenticator.evaluate(failing(end + 5), client(`a@${domain}`))).toMatchObject({
      spf: "pass",
      dkim: "temperror",
      // SPF passed for the From domain: DMARC does not need the signature.
      dmarc: "pass",
      senderAuthenticated: true,
    });
  });

  test("a body that never ends: the budget stops reading it (temperror) and releases the stream", async () => {
    const quick = testAuthenticator(fixture.dns, { budgetMs: 500 });
    const { message } = await authenticatedMessage();
    const end = message.indexOf("\r\n\r\n") + 4;
    let released = false;
    async function* endless(): AsyncGenerator<Uint8Array> {
      try {
        yield message.subarray(0, end);
        const line = Buffer.from("more body\r\n".repeat(6000));
        for (;;) yield line;
      } finally {
        released = true;
      }
    }
    const { value, ms } = await timed(() => quick.evaluate(endless(), client("")));
    expect(value).toMatchObject({ dkim: "temperror", dmarc: "temperror", senderAuthenticated: false });
    expect(ms).toBeLessThan(1500);
    await expect.poll(() => released, { timeout: 10_000 }).toBe(true);
  });
});

describe("configuration", () => {
  test("INBOUND_AUTHENTICATION is on unless off; INBOUND_AUTHENTICATION_TIMEOUT_MS bounds one message (default 5 s)", () => {
    expect(loadConfig({}).inbound).toMatchObject({ authentication: true, authenticationTimeoutMs: 5000 });
    expect(loadConfig({ INBOUND_AUTHENTICATION: "off", INBOUND_AUTHENTICATION_TIMEOUT_MS: "800" }).inbound).toMatchObject({
      authentication: false,
      authenticationTimeoutMs: 800,
    });
    expect(() => loadConfig({ INBOUND_AUTHENTICATION: "yes" })).toThrow(ConfigError);
    expect(() => loadConfig({ INBOUND_AUTHENTICATION_TIMEOUT_MS: "0" })).toThrow(ConfigError);
  });
});
