// Composed messages as a real mail client reads them: Python's `email` package (the standard library's RFC 5322 and
// MIME parser, with its modern policy) parses what composeMime made, and must give back the same bytes, filenames,
// content ids and headers.
import { createHash, randomBytes } from "node:crypto";
import { describe, expect, test } from "vitest";
import { composeMime, type ComposeInput } from "../../src/outbound/compose.js";
import { parseWithPython } from "../support/python-email.js";

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

const base: ComposeInput = {
  messageId: "<4f1c@agents.test>",
  from: { email: "agent@agents.test", domain: "agents.test", name: "Agent" },
  to: [{ email: "alice@example.com", domain: "example.com", name: "Alice" }],
  subject: "Your files",
  text: "See attached.",
  date: new Date("2026-01-02T03:04:05.000Z"),
};

describe("composition with attachments, as Python's email package reads it", () => {
  test("nests text, HTML with its inline image, files and a forwarded message as mixed, alternative and related parts", async () => {
    const pdf = randomBytes(150_000);
    const png = randomBytes(5_000);
    const forwarded = Buffer.from("From: bob@example.net\r\nTo: agent@agents.test\r\nSubject: The original\r\n\r\nOriginal body.\r\n");
    const mime = await composeMime({
      ...base,
      cc: [{ email: "carol@example.org", domain: "example.org", name: "Zoë Müller" }, { email: "dave@example.org", domain: "example.org" }],
      html: '<p>Our logo: <img src="cid:logo.1@agents.test"></p>',
      attachments: [
        { filename: "Rechnung März 2026 – Übersicht.pdf", contentType: "application/pdf", content: pdf },
        { filename: "logo.png", contentType: "image/png", content: png, contentId: "logo.1@agents.test" },
        { filename: "original.eml", contentType: "message/rfc822", content: forwarded },
      ],
    });
    const parsed = parseWithPython(mime);
    expect(parsed.defects).toEqual([]);
    expect(parsed.tree).toEqual({
      type: "multipart/mixed",
      disposition: null,
      filename: null,
      cid: null,
      parts: [
        {
          type: "multipart/alternative",
          disposition: null,
          filename: null,
          cid: null,
          parts: [
            { type: "text/plain", disposition: null, filename: null, cid: null, sha256: sha256(Buffer.from("See attached.")), size: 13 },
            {
              type: "multipart/related",
              disposition: null,
              filename: null,
              cid: null,
              parts: [
                expect.objectContaining({ type: "text/html" }),
                { type: "image/png", disposition: "inline", filename: "logo.png", cid: "<logo.1@agents.test>", sha256: sha256(png), size: png.length },
              ],
            },
          ],
        },
        { type: "application/pdf", disposition: "attachment", filename: "Rechnung März 2026 – Übersicht.pdf", cid: null, sha256: sha256(pdf), size: pdf.length },
        {
          type: "message/rfc822",
          disposition: "attachment",
          filename: "original.eml",
          cid: null,
          inner: { subject: "The original", body: "Original body.\n" },
        },
      ],
    });
    // The name is RFC 2231-encoded in Content-Disposition, never raw 8-bit in a header.
    expect(mime.toString("latin1")).toContain("filename*0*=utf-8''Rechnung%20M%C3%A4rz");
    expect(/[\x80-\xff]/.test(mime.toString("latin1").split("\r\n\r\n")[0]!)).toBe(false);
    expect(parsed.to).toEqual(["alice@example.com"]);
    expect(parsed.cc).toEqual([
      ["Zoë Müller", "carol@example.org"],
      ["", "dave@example.org"],
    ]);
    expect(parsed.headers).toMatchObject({ "Message-ID": "<4f1c@agents.test>", Subject: "Your files" });
    expect(Object.keys(parsed.headers).map((h) => h.toLowerCase())).not.toContain("bcc");
  });

  test("makes a text message with one file multipart/mixed, and gives back every byte of a binary file", async () => {
    const every = Buffer.from(Array.from({ length: 256 * 4 }, (_, i) => i % 256));
    const parsed = parseWithPython(await composeMime({ ...base, attachments: [{ filename: "bytes.bin", contentType: "application/octet-stream", content: every }] }));
    expect(parsed.tree.type).toBe("multipart/mixed");
    expect(parsed.tree.parts!.map((p) => p.type)).toEqual(["text/plain", "application/octet-stream"]);
    expect(parsed.tree.parts![1]).toMatchObject({ filename: "bytes.bin", sha256: sha256(every), size: every.length });
  });

  test.each([
    ["a directory part", "../../etc/passwd", "passwd"],
    ["a Windows path", "C:\\Users\\x\\report.pdf", "report.pdf"],
    ["a right-to-left override that turns exe.pdf around", "invoice\u202Efdp.exe", "invoicefdp.exe"],
    ["line breaks and tabs", "a\r\nX-Evil: 1\tb.txt", "aX-Evil_ 1b.txt"],
    ["quotes and characters file systems refuse", 'a"b<c>d|e?.txt', "a_b_c_d_e_.txt"],
    ["nothing left", "...", "attachment-1"],
  ])("sanitises a filename with %s", async (_what, filename, expected) => {
    const parsed = parseWithPython(await composeMime({ ...base, attachments: [{ filename, contentType: "text/plain", content: Buffer.from("x") }] }));
    expect(parsed.defects).toEqual([]);
    expect(parsed.tree.parts![1]!.filename).toBe(expected);
  });

  test("honours a disposition given, and refuses a content type or Content-ID that could reach past its header", async () => {
    const parsed = parseWithPython(
      await composeMime({ ...base, attachments: [{ filename: "a.png", contentType: "image/png", content: Buffer.from("x"), disposition: "inline" }] }),
    );
    expect(parsed.tree.parts![1]).toMatchObject({ disposition: "inline", filename: "a.png" });
    const attach = (a: object) => composeMime({ ...base, attachments: [{ filename: "a", contentType: "text/plain", content: Buffer.from("x"), ...a }] });
    await expect(attach({ contentType: "text/plain\r\nBcc: x@example.com" })).rejects.toThrow(/not type\/subtype/);
    await expect(attach({ contentType: 'text/html; charset="x"' })).resolves.toBeInstanceOf(Buffer);
    await expect(attach({ contentId: "a>\r\nX-Evil: 1" })).rejects.toThrow(/Content-ID/);
  });
});
