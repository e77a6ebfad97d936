// The ARF parser (RFC 5965) on a table of reports: the RFC's own example, the variants providers send (headers
// only, redacted recipients, encoded parts, folded fields, bare LF) and what is not a report at all.
import { describe, expect, test } from "vitest";
import { parseFeedbackReport } from "../../src/outbound/feedback-reports.js";
import { feedbackReport } from "../support/feedback-report.js";

const crlf = (lines: string[]) => Buffer.from(lines.join("\r\n"));

// RFC 5965 Appendix B.2, verbatim but for line ends: note its Message-ID has no angle brackets and its
// Content-Type and Authentication-Results fields are folded.
const RFC_5965_EXAMPLE = crlf([
  "From: <abusedesk@example.com>",
  "Date: Thu, 8 Mar 2005 17:40:36 EDT",
  "Subject: FW: Earn money",
  "To: <abuse@example.net>",
  "MIME-Version: 1.0",
  "Content-Type: multipart/report; report-type=feedback-report;",
  '     boundary="part1_13d.2e68ed54_boundary"',
  "",
  "--part1_13d.2e68ed54_boundary",
  'Content-Type: text/plain; charset="US-ASCII"',
  "Content-Transfer-Encoding: 7bit",
  "",
  "This is an email abuse report for an email message received from IP",
  "192.0.2.1 on Thu, 8 Mar 2005 14:00:00 EDT.  For more information",
  "about this format please see http://www.mipassoc.org/arf/.",
  "",
  "--part1_13d.2e68ed54_boundary",
  "Content-Type: message/feedback-report",
  "",
  "Feedback-Type: abuse",
  "User-Agent: SomeGenerator/1.0",
  "Version: 1",
  "Original-Mail-From: <somespammer@example.net>",
  "Original-Rcpt-To: <user@example.com>",
  "Arrival-Date: Thu, 8 Mar 2005 14:00:00 EDT",
  "Reporting-MTA: dns; mail.example.com",
  "Source-IP: 192.0.2.1",
  "Authentication-Results: mail.example.com;",
  "               spf=fail smtp.mail=somespammer@example.com",
  "Reported-Domain: example.net",
  "Reported-Uri: http://example.net/earn_money.html",
  "Reported-Uri: mailto:user@example.com",
  "Removal-Recipient: user@example.com",
  "",
  "--part1_13d.2e68ed54_boundary",
  "Content-Type: message/rfc822",
  "Content-Disposition: inline",
  "",
  "From: <somespammer@example.net>",
  "Received: from mailserver.example.net (mailserver.example.net",
  "        [192.0.2.1]) by example.com with ESMTP id M63d4137594e46;",
  "        Thu, 08 Mar 2005 14:00:00 -0400",
  "To: <Undisclosed Recipients>",
  "Subject: Earn money",
  "MIME-Version: 1.0",
  "Content-type: text/plain",
  "Message-ID: 8787KJKJ3K4J3K4J3K4J3.mail@example.net",
  "Date: Thu, 02 Sep 2004 12:31:03 -0500",
  "",
  "Spam Spam Spam",
  "Spam Spam Spam",
  "--part1_13d.2e68ed54_boundary--",
  "",
]);

/** A report with its parts written by hand: top-level headers, then [part headers, part body] pairs. */
function report(parts: [string[], string[]][], contentType = 'multipart/report; report-type=feedback-report; boundary="b1"'): Buffer {
  return crlf([
    "From: <fbl@provider.example>",
    "To: <feedback@agents.test>",
    "MIME-Version: 1.0",
    `Content-Type: ${contentType}`,
    "",
    ...parts.flatMap(([headers, body]) => ["--b1", ...headers, "", ...body]),
    "--b1--",
    "",
  ]);
}

const FEEDBACK = ["Feedback-Type: abuse", "User-Agent: Yahoo!-Mail-Feedback/2.0", "Version: 1", "Original-Rcpt-To: reader@example.com"];
const ORIGINAL = ["From: sender@agents.test", "To: reader@example.com", "Subject: hello", "Message-ID: <abc.123@agents.test>"];

describe("parsing ARF feedback reports", () => {
  test.each([
    [
      "the example of RFC 5965 (bare Message-ID, folded fields, Removal-Recipient beside Original-Rcpt-To)",
      RFC_5965_EXAMPLE,
      {
        feedbackType: "abuse",
        userAgent: "SomeGenerator/1.0",
        recipients: ["user@example.com", "user@example.com"],
        messageId: "<8787KJKJ3K4J3K4J3K4J3.mail@example.net>",
      },
    ],
    [
      "a report returning the whole message (message/rfc822)",
      feedbackReport({ messageId: "<m1@agents.test>", rcptTo: "Reader@Example.com" }),
      { feedbackType: "abuse", userAgent: "SomeGenerator/1.0", recipients: ["Reader@Example.com"], messageId: "<m1@agents.test>" },
    ],
    [
      "a report returning the headers only (text/rfc822-headers), with bare LF line ends",
      feedbackReport({ messageId: "<m2@agents.test>", returned: "headers", eol: "\n" }),
      { feedbackType: "abuse", userAgent: "SomeGenerator/1.0", recipients: ["reader@example.com"], messageId: "<m2@agents.test>" },
    ],
    [
      "a redacted report naming no recipient",
      feedbackReport({ messageId: "<m3@agents.test>", rcptTo: null, feedbackType: "fraud" }),
      { feedbackType: "fraud", userAgent: "SomeGenerator/1.0", recipients: [], messageId: "<m3@agents.test>" },
    ],
    [
      "folded User-Agent and Message-ID fields, a mixed-case Feedback-Type and media types",
      report([
        [["Content-Type: Message/Feedback-Report"], ["Feedback-Type: Abuse", "User-Agent: Big Provider", "  FBL/3.1", "Original-Rcpt-To:", " <reader@example.com>"]],
        [["Content-Type: TEXT/RFC822-HEADERS"], ["From: sender@agents.test", "Message-ID:", "\t<folded.id@agents.test>", "Subject: x"]],
      ], "Multipart/Report;\r\n\treport-type=\"Feedback-Report\";\r\n\tboundary=b1"),
      { feedbackType: "abuse", userAgent: "Big Provider FBL/3.1", recipients: ["reader@example.com"], messageId: "<folded.id@agents.test>" },
    ],
    [
      "base64-encoded feedback and header parts",
      report([
        [["Content-Type: message/feedback-report", "Content-Transfer-Encoding: base64"], [Buffer.from(FEEDBACK.join("\r\n")).toString("base64")]],
        [["Content-Type: text/rfc822-headers", "Content-Transfer-Encoding: base64"], [Buffer.from(ORIGINAL.join("\r\n")).toString("base64")]],
      ]),
      { feedbackType: "abuse", userAgent: "Yahoo!-Mail-Feedback/2.0", recipients: ["reader@example.com"], messageId: "<abc.123@agents.test>" },
    ],
    [
      "a quoted-printable header part and a DSN-style typed recipient",
      report([
        [["Content-Type: message/feedback-report"], ["Feedback-Type: abuse", "User-Agent: X/1", "Original-Rcpt-To: rfc822; reader@example.com"]],
        [["Content-Type: text/rfc822-headers", "Content-Transfer-Encoding: quoted-printable"], ["Subject: caf=C3=A9 =", " and more", "Message-ID: <qp=3D1@agents.test>"]],
      ]),
      { feedbackType: "abuse", userAgent: "X/1", recipients: ["reader@example.com"], messageId: "<qp=1@agents.test>" },
    ],
    [
      "a report without the returned message (no Message-ID to go by)",
      feedbackReport({ returned: "none" }),
      { feedbackType: "abuse", userAgent: "SomeGenerator/1.0", recipients: ["reader@example.com"], messageId: null },
    ],
    [
      "a returned message without a Message-ID header, one only in its body",
      report([
        [["Content-Type: message/feedback-report"], FEEDBACK],
        [["Content-Type: message/rfc822"], ["From: sender@agents.test", "Subject: hi", "", "Message-ID: <in.body@agents.test>"]],
      ]),
      { feedbackType: "abuse", userAgent: "Yahoo!-Mail-Feedback/2.0", recipients: ["reader@example.com"], messageId: null },
    ],
    [
      "a report cut short before its close delimiter",
      crlf([
        'Content-Type: multipart/report; report-type=feedback-report; boundary="b1"',
        "",
        "--b1",
        "Content-Type: message/feedback-report",
        "",
        ...FEEDBACK,
        "--b1",
        "Content-Type: text/rfc822-headers",
        "",
        ...ORIGINAL,
      ]),
      { feedbackType: "abuse", userAgent: "Yahoo!-Mail-Feedback/2.0", recipients: ["reader@example.com"], messageId: "<abc.123@agents.test>" },
    ],
  ])("reads %s", (_name, raw, expected) => {
    expect(parseFeedbackReport(raw)).toEqual({ ok: true, report: expected });
  });

  test.each([
    ["a plain message", crlf(["From: someone@example.com", "Subject: unsubscribe me", "", "please"]), /not a multipart\/report \(text\/plain\)/],
    [
      "a delivery status notification",
      report([[["Content-Type: message/delivery-status"], ["Reporting-MTA: dns; mx.example.com"]]], 'multipart/report; report-type=delivery-status; boundary="b1"'),
      /report-type is not feedback-report/,
    ],
    ["a multipart/report without a boundary", crlf(["Content-Type: multipart/report; report-type=feedback-report", "", "x"]), /no boundary/],
    ["a report whose feedback part is missing", report([[["Content-Type: text/rfc822-headers"], ORIGINAL]]), /no message\/feedback-report part/],
    [
      "a report whose feedback part has no Feedback-Type",
      report([[["Content-Type: message/feedback-report"], ["User-Agent: X/1", "Version: 1"]], [["Content-Type: text/rfc822-headers"], ORIGINAL]]),
      /no valid Feedback-Type/,
    ],
    [
      "a report whose Feedback-Type is not a token",
      report([[["Content-Type: message/feedback-report"], ["Feedback-Type: abuse; drop table", "Version: 1"]]]),
      /no valid Feedback-Type/,
    ],
  ])("refuses %s", (_name, raw, problem) => {
    const parsed = parseFeedbackReport(raw);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatch(problem);
  });

  test("keeps no control characters and at most 255 characters of the User-Agent", () => {
    const parsed = parseFeedbackReport(feedbackReport({ userAgent: `Bad\u0000Agent${"x".repeat(400)}` }));
    expect(parsed.ok && parsed.report.userAgent).toBe(`BadAgent${"x".repeat(247)}`);
  });
});
