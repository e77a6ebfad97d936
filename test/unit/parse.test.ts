// The mail parser adapter on .eml fixtures of real and adversarial mail, one regression test per mailparser bug
// found, and the time and memory budget of its worker threads.
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { extractMessage } from "../../src/extraction/index.js";
import { createEmailParser, type EmailParser, type EmailParserOptions } from "../../src/mail/parse.js";

const OPTIONS: EmailParserOptions = { timeoutMs: 20_000, memoryMb: 256, workers: 1, maxHeaderBytes: 256 * 1024, maxMimeParts: 500 };
const fixture = (name: string) => readFile(new URL(`../fixtures/${name}`, import.meta.url));
/** An HTML-only message of about `bytes` bytes of HTML with links and markup. */
const htmlMessage = (bytes: number) => {
  const line = "<div><p>news <b>item</b> <a href='https://example.org/a'>more</a></p></div>\r\n";
  return Buffer.from(`From: news@example.org\r\nSubject: heavy\r\nContent-Type: text/html\r\n\r\n${line.repeat(Math.ceil(bytes / 70))}`);
};

let parser: EmailParser;
beforeAll(() => {
  parser = createEmailParser(OPTIONS);
});
afterAll(() => parser?.close());

describe("real mail", () => {
  test("a Thunderbird reply: encoded words, quoted-printable flowed text, HTML alternative, threading headers", async () => {
    const email = await parser.parse(await fixture("thunderbird-alternative.eml"));
    expect(email).toMatchObject({
      messageId: "<5f2c1b7e-3a4d-4c1e-9f0a-2b7d8e6c1a90@mail.example.net>",
      inReplyTo: "<b2@mail.example.net>",
      references: ["<a1@agents.test>", "<b2@mail.example.net>"],
      subject: "Re: Réunion de lundi",
      from: { email: "zoe.martin@example.net", name: "Zoé Martin" },
      to: [{ email: "support-bot@agents.test", name: "Support Bot" }],
      text: "Bonjour,\n\nLa réunion est déplacée à 14h. Merci de confirmer avant midi.\n\nZoé",
      attachments: [],
      problem: null,
    });
    expect(email.html).toContain("<p>La réunion est déplacée à <b>14h</b>.</p>");
  });

  test("an Outlook message: nested alternative inside mixed, Cc, and an RFC 2231 encoded attachment name", async () => {
    const email = await parser.parse(await fixture("outlook-attachment.eml"));
    expect(email).toMatchObject({
      subject: "Invoice 2026-114",
      from: { email: "ops@contoso.example", name: "Ops Team" },
      cc: [{ email: "finance@contoso.example", name: "Finance" }],
      text: "Please find the invoice attached.\n",
      problem: null,
    });
    expect(email.attachments).toHaveLength(1);
    expect(email.attachments[0]).toMatchObject({ filename: "Rechnung März.pdf", contentType: "application/pdf" });
    expect(Buffer.from(email.attachments[0]!.content).toString()).toMatch(/^%PDF-1\.4/);
  });

  test("a delivery status notification from the null sender keeps its report as text", async () => {
    const email = await parser.parse(await fixture("dsn-bounce.eml"));
    expect(email.from).toEqual({ email: "MAILER-DAEMON@mx.example.org", name: "Mail Delivery System" });
    expect(email.text).toContain("550 5.1.1 User unknown");
    expect(email.text).toContain("Status: 5.1.1");
  });

  test("mail without From, Subject or Message-ID parses to empty values, not errors", async () => {
    const email = await parser.parse(await fixture("missing-headers.eml"));
    expect(email).toMatchObject({ messageId: null, subject: "", from: null, to: [], text: "a body without From, Subject or Message-ID\n", problem: null });
  });

  test("a cut-off multipart with broken base64 keeps the parts that arrived", async () => {
    const email = await parser.parse(await fixture("unterminated-multipart.eml"));
    expect(email.text).toBe("the part before the damage");
    expect(email.attachments.map((a) => a.filename)).toEqual(["data.bin"]);
  });

  test("never makes HTML from text, and never linkifies", async () => {
    const email = await parser.parse(Buffer.from("From: a@example.org\r\nSubject: t\r\n\r\nsee https://example.org/x\r\n"));
    expect(email.html).toBeNull();
    expect(email.text).toBe("see https://example.org/x\n");
  });
});

describe("regressions of mailparser", () => {
  test("keeps the sender's HTML free of the <br/> separator left by a text part beside it", async () => {
    const email = await parser.parse(await fixture("text-and-html-parts.eml"));
    expect(email.html).toBe("<p>The <em>HTML</em> part.<br/>\nwith a line break of its own</p>");
  });

  test("decodes a raw UTF-8 attachment filename (RFC 6532) instead of leaving Latin-1 mojibake", async () => {
    const email = await parser.parse(await fixture("raw-utf8-filename.eml"));
    expect(email.attachments[0]?.filename).toBe("Übersicht – März.csv");
  });

  test("makes text from the HTML of an HTML-only message inside a multipart, not just of an HTML root", async () => {
    const email = await parser.parse(await fixture("apple-inline-image.eml"));
    expect(email.text).toBe("Here it is:\nshot [cid:F1A2@icloud.example]");
    expect(email.attachments.map((a) => [a.filename, a.contentType])).toEqual([["shot.png", "image/png"]]);
  });

  test("keeps an HTML body too long to make text from, instead of dropping it", async () => {
    const raw = htmlMessage(1200 * 1024);
    const email = await parser.parse(raw);
    expect(email.html?.length).toBeGreaterThan(1200 * 1024);
    expect(email.text).toBe("");
    expect(email.problem).toMatch(/HTML too long/);
  });

  test("removes NUL characters and lone surrogates, which PostgreSQL refuses in text and JSON", async () => {
    const email = await parser.parse(await fixture("nul-and-lone-surrogate.eml"));
    expect(email.subject).toBe("\uFFFDa and a NUL here");
    expect(email.from).toEqual({ email: "odd@example.org", name: "\uFFFD" });
    expect(email.text).toBe("body with a NUL byte\n");
  });

  test("marks a multipart without a boundary as partial instead of quietly losing its body", async () => {
    const email = await parser.parse(await fixture("multipart-without-boundary.eml"));
    expect(email).toMatchObject({ subject: "multipart but no boundary", text: "", problem: "no readable body part" });
  });
});

describe("extraction as the worker answers it", () => {
  // The worker leaves out reply and safe text that are the parsed text trimmed (parse.ts: TrimmedText); what the
  // parser returns must be what extraction makes of the message in this thread.
  const plain = (body: string) =>
    Buffer.from(`From: Ann <ann@example.org>\r\nTo: bot@agents.test\r\nSubject: hello\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}`);
  test.each([
    ["plain text, reply and safe text the text trimmed", "  Hello,\r\n\r\nthe report is attached.\r\n\r\nAnn\r\n\r\n"],
    ["a reply with quoted history: the reply text is the new part", "Fine by me.\r\n\r\nOn Mon, Bob wrote:\r\n> Shall we meet?\r\n> Bob\r\n"],
    ["an invisible character: the safe text is without it", "Pay\u200bPal says hello\r\n"],
  ])("%s", async (_name, body) => {
    const email = await parser.parse(plain(body));
    const input = { text: email.text, html: email.html, subject: email.subject, from: email.from?.email ?? null, replyTo: null, authentication: null };
    expect(email.extracted).toEqual(extractMessage(input));
    expect(email.extracted?.replyText).not.toBe("");
  });
});

describe("the parse budget", () => {
  test("a parse over its time budget is cut off, and the message keeps what its headers say", async () => {
    const hurried = createEmailParser({ ...OPTIONS, timeoutMs: 50 });
    try {
      const email = await hurried.parse(htmlMessage(900 * 1024));
      expect(email).toMatchObject({ subject: "heavy", from: { email: "news@example.org" }, text: "" });
      expect(email.problem).toMatch(/parse time budget of 50 ms exceeded/);
    } finally {
      await hurried.close();
    }
  });

  test("HTML too costly to turn into text within the memory budget leaves the rest of the message whole", async () => {
    const frugal = createEmailParser({ ...OPTIONS, memoryMb: 24 });
    try {
      const email = await frugal.parse(htmlMessage(900 * 1024));
      expect(email.subject).toBe("heavy");
      expect(email.html?.length).toBeGreaterThan(900 * 1024);
      expect(email.text).toBe("");
      expect(email.problem).toMatch(/text from HTML: parser failed: .*memory limit/);
      // The worker that ran out of memory is replaced: the next message parses.
      expect((await frugal.parse(Buffer.from("Subject: next\r\n\r\nsmall\r\n"))).text).toBe("small\n");
    } finally {
      await frugal.close();
    }
  });

  test("other messages parse while one worker is busy with a costly message", async () => {
    const pool = createEmailParser({ ...OPTIONS, workers: 2 });
    try {
      // Start both workers first: a cold start loads mailparser.
      await Promise.all([pool.parse(Buffer.from("Subject: a\r\n\r\na")), pool.parse(Buffer.from("Subject: b\r\n\r\nb"))]);
      const finished: string[] = [];
      const heavy = pool.parse(htmlMessage(900 * 1024)).then(() => finished.push("heavy"));
      const light = pool.parse(Buffer.from("Subject: light\r\n\r\nquick")).then(() => finished.push("light"));
      await Promise.all([heavy, light]);
      expect(finished).toEqual(["light", "heavy"]);
    } finally {
      await pool.close();
    }
  });
});
