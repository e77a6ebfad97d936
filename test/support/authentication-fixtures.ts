// What the sender authentication tests publish and send: DKIM keys (RSA, Ed25519) and SPF and DMARC records on the
// test DNS server, plain messages to sign, and an authenticator that resolves through that server as production
// resolves through DNS_SERVERS (the stub resolver and its TTL cache).
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { createCachingResolver } from "../../src/dns/cache.js";
import { createResolver } from "../../src/dns/resolver.js";
import { createSenderAuthenticator, type SenderAuthenticator, type SmtpClient } from "../../src/authentication/sender-authentication.js";
import { startDnsServer, type TestDnsServer } from "./dns-server.js";

/** A fresh domain under .example, so that nothing cached by another test answers for it. */
export function uniqueDomain(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString("hex")}.example`;
}

export interface DkimKey {
  readonly algorithm: "rsa-sha256" | "ed25519-sha256";
  /** As dkimpy takes it: PKCS#1 PEM (RSA), the base64 32-byte seed (Ed25519). */
  readonly dkimpyKey: string;
  /** As mailauth's signer takes it: PEM. */
  readonly pem: string;
  /** The p= of the key record. */
  readonly publicKey: string;
}

let rsaKey: DkimKey | undefined;

/** One RSA-2048 key per test file (generating one costs tens of milliseconds). */
export function rsaDkimKey(): DkimKey {
  rsaKey ??= (() => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    return {
      algorithm: "rsa-sha256",
      dkimpyKey: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
      pem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      publicKey: publicKey.export({ type: "spki", format: "der" }).toString("base64"),
    };
  })();
  return rsaKey;
}

/** RFC 8463: the key record carries the raw 32-byte public key; dkimpy signs with the raw 32-byte seed. */
export function ed25519DkimKey(): DkimKey {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return {
    algorithm: "ed25519-sha256",
    dkimpyKey: privateKey.export({ type: "pkcs8", format: "der" }).subarray(-32).toString("base64"),
    pem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicKey: publicKey.export({ type: "spki", format: "der" }).subarray(-32).toString("base64"),
  };
}

export function publishDkimKey(dns: TestDnsServer, domain: string, selector: string, key: DkimKey): void {
  const k = key.algorithm === "ed25519-sha256" ? "ed25519" : "rsa";
  dns.set(`${selector}._domainkey.${domain}`, [{ type: "TXT", text: `v=DKIM1; k=${k}; p=${key.publicKey}` }]);
}

export function publishSpf(dns: TestDnsServer, domain: string, record: string): void {
  dns.set(domain, [{ type: "TXT", text: record }]);
}

export function publishDmarc(dns: TestDnsServer, domain: string, record: string): void {
  dns.set(`_dmarc.${domain}`, [{ type: "TXT", text: record }]);
}

/** A plain message; `headers` are placed after From. */
export function plainMessage(from: string, options: { headers?: string[]; body?: string; subject?: string } = {}): Buffer {
  const lines = [
    `From: ${from}`,
    ...(options.headers ?? []),
    "To: agent@agents.test",
    `Subject: ${options.subject ?? "Your invoice"}`,
    "Date: Mon, 02 Nov 2026 10:00:00 +0000",
    `Message-ID: <${randomBytes(6).toString("hex")}@sender.example>`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    options.body ?? "Please find the invoice attached.\r\nThanks,\r\nBilling",
    "",
  ];
  return Buffer.from(lines.join("\r\n"));
}

/** The address the tests' SMTP clients connect from. */
export const CLIENT_IP = "192.0.2.10";

export function client(mailFrom: string, helo = "mail.sender.example", remoteIp = CLIENT_IP): SmtpClient {
  return { remoteIp, helo, mailFrom };
}

/** The service's evaluation over the test DNS server: its stub resolver, behind the TTL cache. */
export function testAuthenticator(dns: TestDnsServer, options: { budgetMs?: number; dnsTimeoutMs?: number; maxHeaderBytes?: number } = {}): SenderAuthenticator {
  return createSenderAuthenticator({
    resolver: createCachingResolver(createResolver({ servers: [dns.address], timeoutMs: options.dnsTimeoutMs ?? 300 })),
    hostname: "mx.agents.test",
    budgetMs: options.budgetMs ?? 5000,
    ...(options.maxHeaderBytes === undefined ? {} : { maxHeaderBytes: options.maxHeaderBytes }),
  });
}

/** A test DNS server and the authenticator over it, started before the file's tests and stopped after them. */
export function authenticationFixture(): { readonly dns: TestDnsServer; readonly authenticator: SenderAuthenticator } {
  const fixture = {} as { dns: TestDnsServer; authenticator: SenderAuthenticator };
  beforeAll(async () => {
    fixture.dns = await startDnsServer();
    fixture.authenticator = testAuthenticator(fixture.dns);
  });
  afterAll(() => fixture.dns?.stop());
  return fixture;
}
