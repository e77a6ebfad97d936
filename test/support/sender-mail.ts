// Mail from senders whose authentication a test controls, for tests of the smtp role: a domain that publishes SPF for
// the loopback address the tests' SMTP clients connect from, a DKIM key and a DMARC policy on the test's DNS server
// (test/support/dns-server.ts, reached through DNS_SERVERS), and messages signed with that key, sent over real SMTP.
import { dkimSign } from "mailauth";
import { plainMessage, publishDkimKey, publishDmarc, publishSpf, rsaDkimKey, uniqueDomain } from "./authentication-fixtures.js";
import type { TestDnsServer } from "./dns-server.js";
import { sendRaw } from "./smtp-client.js";

/** Where the tests' SMTP clients connect from: what an SPF record must name. */
export const LOOPBACK_CLIENT = "127.0.0.1";

export interface SenderDomain {
  readonly domain: string;
  /** The message as the domain's server sends it: DKIM-signed (relaxed/relaxed, RSA-2048) for the domain. */
  sign(message: Buffer): Promise<Buffer>;
}

/** A fresh domain that authenticates its mail: SPF for the loopback client, a DKIM key, DMARC p=reject. */
export function authenticatedDomain(dns: TestDnsServer, prefix = "sender"): SenderDomain {
  const domain = uniqueDomain(prefix);
  const key = rsaDkimKey();
  publishSpf(dns, domain, `v=spf1 ip4:${LOOPBACK_CLIENT} -all`);
  publishDkimKey(dns, domain, "s1", key);
  publishDmarc(dns, domain, "v=DMARC1; p=reject");
  return {
    domain,
    async sign(message) {
      const { signatures } = await dkimSign(message, {
        canonicalization: "relaxed/relaxed",
        signatureData: [{ signingDomain: domain, selector: "s1", privateKey: key.pem }],
      } as never);
      return Buffer.concat([Buffer.from(signatures), message]);
    },
  };
}

/** A domain whose policy refuses mail it did not send (SPF -all for everyone, DMARC p=reject), and no key. */
export function protectedDomain(dns: TestDnsServer, prefix = "bank"): string {
  const domain = uniqueDomain(prefix);
  publishSpf(dns, domain, "v=spf1 -all");
  publishDmarc(dns, domain, "v=DMARC1; p=reject");
  return domain;
}

export interface MailToSend {
  readonly from: string;
  /** The envelope sender; the From address when omitted. */
  readonly mailFrom?: string;
  readonly to: string;
  readonly subject?: string;
  readonly body?: string;
  readonly headers?: string[];
  /** Signs the message (a SenderDomain's sign) before it is sent. */
  readonly sign?: (message: Buffer) => Promise<Buffer>;
}

/** Sends one message over SMTP to the smtp role; resolves once it was accepted (250). */
export async function sendMail(port: number, mail: MailToSend): Promise<void> {
  const address = /<([^>]+)>/.exec(mail.from)?.[1] ?? mail.from;
  // Its To header names agent@agents.test: the envelope recipient is what delivers it.
  const made = plainMessage(mail.from, {
    headers: [...(mail.headers ?? [])],
    ...(mail.subject === undefined ? {} : { subject: mail.subject }),
    ...(mail.body === undefined ? {} : { body: mail.body }),
  });
  // A Message-ID given among the headers replaces the one made up.
  const ownId = mail.headers?.some((h) => /^message-id:/i.test(h));
  const plain = ownId ? Buffer.from(made.toString("latin1").replace(/^Message-ID: <[0-9a-f]+@sender\.example>\r\n/m, ""), "latin1") : made;
  const data = mail.sign ? await mail.sign(plain) : plain;
  const replies = await sendRaw(port, { from: mail.mailFrom ?? address, to: [mail.to], data });
  if (replies.message?.code !== 250) throw new Error(`the message was not accepted: ${JSON.stringify(replies)}`);
}
