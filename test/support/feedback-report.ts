// ARF feedback reports (RFC 5965) as mailbox providers send them, for tests: the three parts of a
// multipart/report (human-readable text, message/feedback-report, the returned message or its headers).
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
    "From: <abusedesk@example.com>",
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
