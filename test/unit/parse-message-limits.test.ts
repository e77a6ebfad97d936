// The structural limits checked while DATA streams in: header size, MIME depth and part count, whatever the
// chunking of the bytes on the wire.
import { describe, expect, test } from "vitest";
import { MessageStructureCheck, multipartBoundary, type MessageLimits } from "../../src/mail/message-limits.js";

const LIMITS: MessageLimits = { maxHeaderBytes: 200, maxMimeDepth: 2, maxMimeParts: 4 };

/** Checks a message fed in chunks of the given size (1 byte, a few bytes, all at once). */
function check(message: string, chunkSize = message.length, limits = LIMITS) {
  const structure = new MessageStructureCheck(limits);
  const bytes = Buffer.from(message, "latin1");
  for (let i = 0; i < bytes.length; i += chunkSize) structure.write(bytes.subarray(i, i + chunkSize));
  return structure.finish();
}

const nested = (depth: number) => {
  let part = "Content-Type: text/plain\r\n\r\nleaf\r\n";
  for (let d = depth; d >= 1; d--) part = `Content-Type: multipart/mixed;\r\n boundary="b${d}"\r\n\r\n--b${d}\r\n${part}--b${d}--\r\n`;
  return `Subject: x\r\n${part}`;
};
const parts = (n: number) =>
  `Content-Type: multipart/mixed; boundary=s\r\n\r\n${Array.from({ length: n - 1 }, () => "--s\r\n\r\nbody\r\n").join("")}--s--\r\n`;

describe("MessageStructureCheck", () => {
  test.each([1, 3, 64, 100_000])("gives the same verdicts however the bytes are chunked (%i-byte chunks)", (size) => {
    expect(check(nested(2), size)).toBeNull();
    expect(check(nested(3), size)).toBe("mime_too_deep");
    expect(check(parts(4), size)).toBeNull();
    expect(check(parts(5), size)).toBe("too_many_parts");
    expect(check(`Subject: ${"s".repeat(150)}\r\nX: ${"x".repeat(60)}\r\n\r\nbody`, size)).toBe("header_too_large");
  });

  test.each([
    ["a plain message", "Subject: hi\r\n\r\nbody\r\n", null],
    ["a header section ending at the last byte", "Subject: hi", null],
    ["bare LF line ends", "Subject: hi\nContent-Type: multipart/mixed; boundary=q\n\n--q\n\na\n--q\n\nb\n--q--\n", null],
    ["one header line longer than the whole limit", `Subject: ${"y".repeat(300)}\r\n\r\nbody`, "header_too_large"],
    ["a long body line is never a header", `Subject: hi\r\n\r\n${"z".repeat(5000)}\r\n`, null],
    ["a part's own header block over the limit", `Content-Type: multipart/mixed; boundary=s\r\n\r\n--s\r\nX: ${"p".repeat(250)}\r\n\r\nb\r\n--s--\r\n`, "header_too_large"],
    // Boundary-looking lines of a multipart that is not open are content, as the parser (mailsplit) reads them.
    ["boundaries of no open multipart", `Subject: hi\r\n\r\n--s\r\n--s\r\n--s\r\n--s\r\n--s\r\n`, null],
    ["a boundary that closes the parent closes its child too", `Content-Type: multipart/mixed; boundary=o\r\n\r\n--o\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n--i\r\n\r\nx\r\n--o--\r\n`, null],
    ["lines that start like a boundary without being one", `Content-Type: multipart/mixed; boundary=s\r\n\r\n--s\r\n\r\n-s\r\n--t\r\n--s-\r\n--s--\r\n`, null],
    // After the outermost multipart closes (the epilogue) nothing is a boundary any more, however many look like one.
    ["an epilogue of boundary lines", `Content-Type: multipart/mixed; boundary=s\r\n\r\n--s\r\n\r\nb\r\n--s--\r\n${"--s\r\n".repeat(9)}`, null],
  ])("%s", (_name, message, verdict) => {
    for (const size of [1, 2, message.length]) expect(check(message, size)).toBe(verdict);
  });
});

describe("multipartBoundary", () => {
  test.each([
    ["quoted", 'Content-Type: multipart/mixed; boundary="abc def"\n', "abc def"],
    ["bare, any header case, folded", "content-TYPE: Multipart/Alternative;\n\tBoundary=xyz\n", "xyz"],
    ["not multipart", 'Content-Type: text/plain; boundary="nope"\n', null],
    ["multipart without a boundary", "Content-Type: multipart/mixed\n", null],
    ["no Content-Type", "Subject: boundary=x\n", null],
  ])("%s", (_name, block, boundary) => {
    expect(multipartBoundary(block)).toBe(boundary);
  });
});
