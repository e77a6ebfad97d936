// The structure check skips a body's lines that cannot be boundaries with one search instead of a step per line
// (src/mail/message-limits.ts): its verdicts stay those of the line-by-line reading whatever the chunking — with
// boundaries after long base64 bodies, lines that start with one "-" or hold a boundary after their start, boundary
// lines cut by a chunk's end, bare LFs.
import { describe, expect, test } from "vitest";
import { MessageStructureCheck, type MessageLimits } from "../../src/mail/message-limits.js";

const LIMITS: MessageLimits = { maxHeaderBytes: 400, maxMimeDepth: 3, maxMimeParts: 6 };

/** 76-character lines of base64 text, as a large attachment's body is. */
const base64Lines = (lines: number, eol: string) =>
  Array.from({ length: lines }, (_, i) => `${String.fromCharCode(65 + (i % 26)).repeat(72)}${String(i % 10000).padStart(4, "0")}${eol}`).join("");

/** A multipart of `n` leaf parts, each a long base64 body, with lines that look like boundaries but are not. */
function message(n: number, eol: string, depth = 1): string {
  const leaf = (i: number) =>
    `--b${depth}${eol}Content-Type: application/octet-stream${eol}Content-Transfer-Encoding: base64${eol}${eol}` +
    `${base64Lines(50 + i, eol)}-not a boundary${eol}--b${depth}x${eol}--B${depth}${eol}- --b${depth}${eol}x--b${depth}${eol}` +
    `${"A".repeat(70)}--b${depth}--${eol}${base64Lines(3, eol)}`;
  let body = `${Array.from({ length: n }, (_, i) => leaf(i)).join("")}--b${depth}--${eol}epilogue${eol}`;
  let headers = `Content-Type: multipart/mixed; boundary=b${depth}${eol}${eol}`;
  for (let d = depth - 1; d >= 1; d--) {
    body = `--b${d}${eol}${headers}${body}--b${d}--${eol}`;
    headers = `Content-Type: multipart/mixed; boundary=b${d}${eol}${eol}`;
  }
  return `Subject: large${eol}${headers}${body}`;
}

/** The verdict for the message fed in the given chunk sizes, cycled. */
function verdict(text: string, sizes: readonly number[]) {
  const check = new MessageStructureCheck(LIMITS);
  const bytes = Buffer.from(text, "latin1");
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    check.write(bytes.subarray(at, at + size));
    at += size;
  }
  return check.finish();
}

const CHUNKINGS: readonly (readonly number[])[] = [[1], [2], [3], [75], [76], [77], [78], [79], [1000], [65_536], [1 << 24], [5, 1, 77, 2, 300, 1], [78, 78, 1, 64]];

describe.each(["\r\n", "\n"])("line ends %j", (eol) => {
  test.each(CHUNKINGS)("verdicts after long base64 bodies, in chunks of %j bytes", (...sizes) => {
    // Parts: the root, each leaf, the nested multiparts.
    expect(verdict(message(5, eol), sizes)).toBeNull();
    expect(verdict(message(6, eol), sizes)).toBe("too_many_parts");
    expect(verdict(message(2, eol, 3), sizes)).toBeNull();
    expect(verdict(message(1, eol, 4), sizes)).toBe("mime_too_deep");
    // A part's header block over the limit, after a long body.
    const header = message(2, eol).replace(`--b1--${eol}epilogue`, `--b1${eol}X-Long: ${"h".repeat(500)}${eol}${eol}body${eol}--b1--${eol}epilogue`);
    expect(verdict(header, sizes)).toBe("header_too_large");
  });
});
