// ARF feedback reports (RFC 5965) as mailbox providers send them, for tests: the three parts of a
// multipart/report (human-readable text, message/feedback-report, the returned message or its headers); and the
// DNS records (SPF, a DKIM key) on the test DNS server that authenticate their sender.
import { generateKeyPairSync } from "node:crypto";
import type { TestDnsServer } from "./dns-server.js";

export interface FeedbackReportOptions {
  /** The reported message's Message-ID; null leaves the header out of the returned part. */
  readonly messageId?: string | null;
  /** Original-Rcpt-To; null leaves it out (a redacted report). */
  readonly rcptTo?: string | null;
  readonly feedbackType?: string;
  readonly userAgent?: string;
  /** message/rfc822 (the whole message), text/rfc822-headers (headers only), or no returned part. */
  readonly returned?: "message" | "headers" | "none";
  readonly to?: string;
  /** The report's From address. */
  readonly from?: string;
  readonly eol?: "\r\n" | "\n";
}

export function feedbackReport(options: FeedbackReportOptions = {}): Buffer {
  const {
    messageId = "<report-me@agents.test>",
    rcptTo = "reader@example.com",
    feedbackType = "abuse",
    userAgent = "SomeGenerator/1.0",
    returned = "message",
    to = "feedback@agents.test",
    from = "abusedesk@example.com",
    eol = "\r\n",
  } = options;
  const boundary = "part1_13d.2e68ed54_boundary";
  const originalHeaders = [
    "From: <sender@agents.test>",
    `To: <${rcptTo ?? "undisclosed@example.com"}>`,
    "Subject: Earn money",
    ...(messageId === null ? [] : [`Message-ID: ${messageId}`]),
    "Date: Thu, 02 Sep 2004 12:31:03 -0500",
  ];
  const lines = [
    `From: <${from}>`,
    "Date: Thu, 8 Mar 2005 17:40:36 EDT",
    "Subject: FW: Earn money",
    `To: <${to}>`,
    "MIME-Version: 1.0",
    "Content-Type: multipart/report; report-type=feedback-report;",
    `     boundary="${boundary}"`,
    "",
    `--${boundary}`,
    'Content-Type: text/plain; charset="US-ASCII"',
    "Content-Transfer-Encoding: 7bit",
    "",
    "This is an email abuse report for an email message received from IP",
    "192.0.2.1 on Thu, 8 Mar 2005 14:00:00 EDT.",
    "",
    `--${boundary}`,
    "Content-Type: message/feedback-report",
    "",
    `Feedback-Type: ${feedbackType}`,
    `User-Agent: ${userAgent}`,
    "Version: 1",
    "Original-Mail-From: <sender@agents.test>",
    ...(rcptTo === null ? [] : [`Original-Rcpt-To: <${rcptTo}>`]),
    "Arrival-Date: Thu, 8 Mar 2005 14:00:00 EDT",
    "Reporting-MTA: dns; mail.example.com",
    "Source-IP: 192.0.2.1",
    "",
    ...(returned === "none"
      ? []
      : returned === "message"
        ? [`--${boundary}`, "Content-Type: message/rfc822", "Content-Disposition: inline", "", ...originalHeaders, "", "Spam Spam Spam", ""]
        : [`--${boundary}`, "Content-Type: text/rfc822-headers", "", ...originalHeaders, ""]),
    `--${boundary}--`,
    "",
  ];
  return Buffer.from(lines.join(eol));
}

/** What nodemailer's `dkim` option takes to sign a message with a key published on the test DNS server. */
export interface DkimSigner {
  readonly domainName: string;
  readonly keySelector: string;
  readonly privateKey: string;
}

let keyPair: { privateKey: string; publicKey: string } | undefined;

/** Publishes a DKIM key (one RSA-2048 key for the whole test file) at <selector>._domainkey.<domain>. */
export function publishDkimKey(dns: TestDnsServer, domainName: string, keySelector = "fbl"): DkimSigner {
  keyPair ??= (() => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    return {
      privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      publicKey: publicKey.export({ type: "spki", format: "der" }).toString("base64"),
    };
  })();
  dns.set(`${keySelector}._domainkey.${domainName}`, [{ type: "TXT", text: `v=DKIM1; k=rsa; p=${keyPair.publicKey}`.match(/.{1,255}/g)! }]);
  return { domainName, keySelector, privateKey: keyPair.privateKey };
}

/** An SPF record for a domain that authorizes the loopback addresses tests connect from, or no address at all. */
export function publishSpf(dns: TestDnsServer, domain: string, loopback: "pass" | "fail" = "pass"): void {
  dns.set(domain, [{ type: "TXT", text: loopback === "pass" ? "v=spf1 ip4:127.0.0.0/8 ip6:::1 -all" : "v=spf1 -all" }]);
}
