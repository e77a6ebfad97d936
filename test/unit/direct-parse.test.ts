// The direct parse (src/mail/direct-parse.ts) against mailparser, through the real parser worker: over a generated
// corpus — folded headers, RFC 2047 encoded words (Q and B, several charsets, malformed), raw UTF-8 headers, odd
// spacing and case, duplicate and missing headers, CRLF and bare LF, quoted-printable with soft breaks and odd `=XX`,
// base64 with and without line breaks (and malformed), format=flowed, charsets UTF-8, US-ASCII, ISO-8859-1,
// windows-1252, unknown and multi-byte ones, empty bodies, and shapes it must leave to mailparser (multipart,
// attachments, a boundary on a text part, no header end, an oversized header section) — a worker that parses
// directly and one that never does answer every job (parsed message, extraction, text from HTML) deep-equal. Each
// message says whether the direct parse must take it, leave it, or may do either (malformed base64), and the test
// holds it to that, so the direct path can neither silently decline everything nor take what it must not.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { corpusMessages } from "../../bench/corpus-messages.js";
import { parseDirect } from "../../src/mail/direct-parse.js";
import type { FromParseWorker, ParseWorkerSettings, ToParseWorker } from "../../src/mail/parse.js";
import { random, type Random } from "./seeded-random.js";

const SEED = 20261127;
const FIXTURES = new URL("../fixtures", import.meta.url).pathname;
const MESSAGES = 2000;
const MAX_HEADER_BYTES = 16 * 1024;
const MAX_MIME_PARTS = 100;
/** Thousands of jobs through two workers: ~20 s on a quiet machine, minutes beside other test files at load 16. */
const JOB_TIMEOUT_MS = 600_000;

type Expected = "direct" | "mailparser" | "either";

interface Sample {
  readonly raw: Buffer;
  readonly expected: Expected;
  readonly alternative: boolean;
  /** What was chosen, for the failure message. */
  readonly shape: string;
}

/** A header field name in one of the spellings senders use. */
function fieldName(r: Random, name: string): string {
  return r.pick([name, name, name, name.toLowerCase(), name.toUpperCase()]);
}

/** "Name:" and the value, with the spacing senders use, folded at a space now and then. */
function field(r: Random, name: string, value: string, eol: string): string {
  const separator = r.pick([": ", ": ", ":", ":  ", ":\t"]);
  const folded = r.chance(0.2) ? value.replace(/ /g, () => (r.chance(0.3) ? `${eol}${r.pick([" ", "\t", "  "])}` : " ")) : value;
  return `${fieldName(r, name)}${separator}${folded}${eol}`;
}

const WORDS = ["hello", "Réunion", "naïve", "Grüße", "мир", "日本語", "emoji 🎉", "a_b", "x=y", "?", "tab\there", "quote\"d", "comma, here", "", "  spaced  "];

/** An RFC 2047 encoded word of the text, in Q or B, in a charset that can hold it (or one that cannot, or unknown). */
function encodedWord(r: Random, text: string): string {
  const charset = r.pick(["utf-8", "UTF-8", "iso-8859-1", "windows-1252", "x-unknown", "us-ascii", "gbk"]);
  const latin = /^[\x00-\xff]*$/.test(text);
  const bytes = charset.toLowerCase() === "utf-8" || !latin ? Buffer.from(text) : Buffer.from(text, "latin1");
  if (r.chance(0.5)) return `=?${charset}?${r.pick(["B", "b"])}?${bytes.toString("base64")}?=`;
  const q = [...bytes].map((b) => (b === 0x20 ? "_" : b > 0x20 && b < 0x7f && b !== 0x3d && b !== 0x3f && b !== 0x5f ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, "0")}`));
  return `=?${charset}?${r.pick(["Q", "q"])}?${q.join("")}?=`;
}

/** Some text as a header value: plain, raw UTF-8, encoded words (adjacent, split, malformed). */
function headerText(r: Random): string {
  const parts: string[] = [];
  for (let i = 0, n = 1 + r.int(4); i < n; i++) {
    const word = r.pick(WORDS);
    parts.push(
      r.pick([
        () => word,
        () => encodedWord(r, word),
        () => `${encodedWord(r, word)} ${encodedWord(r, r.pick(WORDS))}`,
        () => `=?utf-8?Q?${word}`, // unterminated
        () => `=?utf-8?X?${word}?=`, // unknown encoding
        () => `=?utf-8?B?${Buffer.from(word).toString("base64").slice(0, -1)}?=`, // cut base64
      ])(),
    );
  }
  return parts.join(r.pick([" ", "  ", "\t", ""]));
}

const MAILBOXES = ["ann@example.org", "Bob.Smith@EXAMPLE.net", "x@xn--bcher-kva.example", "ünï@exämple.org", "a+tag@sub.example.com", "weird", ""];

function address(r: Random): string {
  const mailbox = r.pick(MAILBOXES);
  return r.pick([
    () => mailbox,
    () => `<${mailbox}>`,
    () => `${r.pick(WORDS)} <${mailbox}>`,
    () => `"${r.pick(WORDS)}" <${mailbox}>`,
    () => `${encodedWord(r, r.pick(WORDS))} <${mailbox}>`,
    () => `${encodedWord(r, `${r.pick(WORDS)} <${mailbox}>`)}`, // a whole address in an encoded word
    () => `${mailbox} (${r.pick(WORDS)})`,
    () => `Team: ${mailbox}, ${r.pick(MAILBOXES)};`,
    () => `<<${mailbox}>>`,
  ])();
}

function addressList(r: Random): string {
  return Array.from({ length: 1 + r.int(3) }, () => address(r)).join(r.pick([", ", ",", " , ", ",\t"]));
}

function messageIdValue(r: Random): string {
  return r.pick([
    () => `<${r.int(1e9)}.${r.int(1e6)}@mail.example.org>`,
    () => `${r.int(1e9)}@no-brackets.example`,
    () => `<a@b> <c@d>`,
    () => `<with space@x>`,
    () => `<${"x".repeat(1000 + r.int(10))}@long.example>`,
    () => encodedWord(r, `<${r.int(1e6)}@encoded.example>`),
    () => "",
    () => "<>",
  ])();
}

function references(r: Random): string {
  return Array.from({ length: r.int(6) }, () => `<${r.int(1e9)}@ref.example>`).join(r.pick([" ", "\t", ", ", " "]));
}

/** The header fields besides the MIME ones: some missing, some twice, in any order. */
function headerFields(r: Random, eol: string): string[] {
  const fields: string[] = [];
  const maybe = (p: number, make: () => string) => {
    if (r.chance(p)) fields.push(make());
    if (r.chance(0.05)) fields.push(make()); // twice
  };
  maybe(0.9, () => field(r, "From", addressList(r), eol));
  maybe(0.9, () => field(r, "To", addressList(r), eol));
  maybe(0.3, () => field(r, "Cc", addressList(r), eol));
  maybe(0.2, () => field(r, "Reply-To", address(r), eol));
  maybe(0.9, () => field(r, "Subject", headerText(r), eol));
  maybe(0.8, () => field(r, "Message-ID", messageIdValue(r), eol));
  maybe(0.3, () => field(r, "In-Reply-To", messageIdValue(r), eol));
  maybe(0.3, () => field(r, "References", references(r), eol));
  maybe(0.7, () => field(r, "Date", r.pick(["Fri, 27 Nov 2026 06:00:00 +0000", "27 Nov 2026 06:00 GMT", "yesterday", ""]), eol));
  maybe(0.2, () => field(r, "X-Priority", r.pick(["1 (Highest)", "3", "low"]), eol));
  maybe(0.2, () => field(r, "List-Unsubscribe", "<mailto:u@example.org>, <https://example.org/u>", eol));
  maybe(0.3, () => field(r, "Received", "from a.example by b.example; Fri, 27 Nov 2026 06:00:00 +0000", eol));
  maybe(0.1, () => `X-Raw-8bit: ${r.pick(WORDS)}${eol}`);
  maybe(0.05, () => `no colon here${eol}`);
  for (let i = fields.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
  }
  return fields;
}

const LINES = [
  "Hello there,",
  "Your code is 482913. It expires in 10 minutes.",
  "Visit https://example.org/confirm?token=abc&x=1 to confirm.",
  "> quoted line from the earlier message",
  "On Thu, Ann wrote:",
  "-- ",
  "Grüße aus Zürich — naïve café",
  "日本語のテキスト",
  "trailing spaces   ",
  "From the start of a line",
  "--looks-like-a-boundary",
  ".leading dot",
  "tab\tinside",
  "",
  "a long line ".repeat(12),
  "=3D not encoded",
  "\u0000nul",
  "lone \r carriage return",
];

/** The text of a body: lines of the kinds above, in the line ending of the message (mixed now and then). */
function bodyText(r: Random, eol: string): string {
  const lines = Array.from({ length: r.int(12) }, () => r.pick(LINES));
  const end = () => (r.chance(0.05) ? r.pick(["\r\n", "\n"]) : eol);
  return lines.map((l) => l + end()).join("") + (r.chance(0.3) ? r.pick(LINES) : "");
}

/** Text/HTML bytes in a charset: what it cannot hold becomes "?", and invalid UTF-8 now and then. */
function encodeText(r: Random, text: string, charset: string): Buffer {
  const name = charset.toLowerCase();
  // Single-byte charsets: with bytes 0x80–0x9f now and then, where ISO-8859-1 and windows-1252 differ.
  if (["iso-8859-1", "windows-1252", "latin1"].includes(name)) {
    const bytes = Buffer.from(text.replace(/[^\x00-\xff]/g, "?"), "latin1");
    return r.chance(0.3) ? Buffer.concat([bytes, r.bytes(8).map((b) => 0x80 | b)]) : bytes;
  }
  if (["us-ascii", "ascii"].includes(name)) return Buffer.from(text.replace(/[^\x00-\x7f]/g, "?"));
  const bytes = Buffer.from(text);
  return r.chance(0.1) ? Buffer.concat([bytes, Buffer.from([0xc3, 0x28, 0xff, 0x80])]) : bytes;
}

/** Quoted-printable of the bytes (as Latin-1 text), lines wrapped with soft breaks, with the oddities senders produce (raw 8-bit bytes among them). */
function quotedPrintable(r: Random, bytes: Buffer, eol: string): string {
  let out = "";
  let line = 0;
  for (const b of bytes) {
    const literal = (b >= 0x21 && b <= 0x7e && b !== 0x3d) || b === 0x20 || b === 0x09;
    const piece = b === 0x0a ? eol : b === 0x0d ? "" : literal ? String.fromCharCode(b) : `=${b.toString(16).padStart(2, "0")}`;
    const cased = r.chance(0.8) ? piece.toUpperCase() : piece;
    if (b === 0x0a) line = 0;
    else if (line + cased.length > 75) {
      out += `=${r.chance(0.1) ? "  " : ""}${r.pick([eol, eol, "\n", "\r\n"])}`;
      line = 0;
    }
    out += cased;
    line += cased.length;
  }
  const oddities = [() => "\u00c3\u00a9", () => "\u00e9", () => "=ZZ", () => "==41", () => "=4", () => "=", () => "= \r\n", () => "=\t\n", () => "=e9", () => " \t", () => "=C3=A9"];
  for (let i = r.chance(0.4) ? r.int(4) : 0; i > 0; i--) {
    const at = r.int(out.length + 1);
    out = out.slice(0, at) + r.pick(oddities)() + out.slice(at);
  }
  return out;
}

/** Base64 of the bytes, in lines of some width or none; `malformed`: with something libbase64 may decode differently in pieces. */
function base64(r: Random, bytes: Buffer, eol: string, malformed: boolean): string {
  const encoded = bytes.toString("base64");
  const width = r.pick([76, 76, 64, 0, 4, 1000]);
  let out = width === 0 ? encoded : encoded.replace(new RegExp(`.{${width}}`, "g"), `$&${eol}`);
  if (r.chance(0.3)) out += eol;
  if (malformed) {
    const at = r.int(out.length + 1);
    out = out.slice(0, at) + r.pick(["=", "QQ==", "*", " ", "-_", "\u00e4", "A"]) + out.slice(at);
  }
  return out;
}

/** Format=flowed lines: soft breaks (trailing space), quotes, a signature, stuffing. */
function flowedText(r: Random, eol: string): string {
  const lines = Array.from({ length: 1 + r.int(8) }, () =>
    r.pick(["This paragraph goes on ", "and on ", "until it ends.", "> quoted flowed ", "> quoted end", "-- ", " From stuffed", "", "spaces at end  "]),
  );
  return lines.join(eol) + eol;
}

const CHARSETS: readonly { name: string; direct: boolean }[] = [
  { name: "utf-8", direct: true },
  { name: "UTF-8", direct: true },
  { name: '"utf-8"', direct: true },
  { name: "us-ascii", direct: true },
  { name: "iso-8859-1", direct: true },
  { name: "ISO-8859-1", direct: true },
  { name: "windows-1252", direct: true },
  { name: "x-unknown-charset", direct: true },
  { name: "gbk", direct: false },
  { name: "utf-16le", direct: false },
  { name: "iso-2022-jp", direct: false },
];

/** A text part: its MIME header fields and body, and whether the direct parse must leave it or may do either. */
interface Part {
  readonly mime: string[];
  readonly body: Buffer;
  readonly leave: boolean;
  readonly either: boolean;
  readonly shape: string;
}

/** A text part the direct parse must take, or of a shape near it that it must leave. */
function textPart(r: Random, eol: string, html = r.chance(0.25), nested = false): Part {
  const shape: string[] = [];
  const charset = r.pick(CHARSETS);
  const flowed = !html && r.chance(0.15);
  const encoding = r.pick(["", "7bit", "8bit", "8BIT", "binary", "quoted-printable", "Quoted-Printable", "base64", " Base64 ", "base64 (comment)", "x-uuencode"]);
  shape.push(`${html ? "html" : "text"} ${charset.name} ${encoding || "no CTE"}${flowed ? " flowed" : ""}`);

  const text = flowed ? flowedText(r, eol) : html ? `<html><body><p>${bodyText(r, eol)}</p><a href="https://example.org/x">link</a></body></html>${eol}` : bodyText(r, eol);
  const bytes = r.chance(0.05) ? Buffer.alloc(0) : encodeText(r, text, charset.name.replace(/"/g, ""));
  const cte = encoding.replace(/\(.*\)/, "").trim().toLowerCase();
  const malformed = cte === "base64" && r.chance(0.2);
  if (malformed) shape.push("malformed base64");
  const body = cte === "quoted-printable" ? quotedPrintable(r, bytes, eol) : cte === "base64" ? base64(r, bytes, eol, malformed) : bytes;

  let type = `${html ? "text/html" : r.pick(["text/plain", "TEXT/PLAIN", "Text/Plain"])}; charset=${charset.name}`;
  if (flowed) type += `; format=flowed${r.chance(0.5) ? "; delsp=yes" : ""}`;
  const typed = html || r.chance(0.9);
  if (!typed) shape.push("no Content-Type");
  const mime: string[] = [];
  if (typed) mime.push(field(r, "Content-Type", type, eol));
  if (encoding) mime.push(field(r, "Content-Transfer-Encoding", encoding, eol));
  const near = nearShape(r, eol, type, mime, nested);
  if (near) shape.push(near.shape);
  return {
    mime: near?.mime ?? mime,
    body: near?.body ?? (typeof body === "string" ? Buffer.from(body, "latin1") : body),
    leave: near?.leave === true || (typed && !charset.direct),
    either: malformed,
    shape: shape.join(" "),
  };
}

/**
 * Now and then a shape near the common one: its MIME header fields (`mime` with a disposition, or others) and body;
 * `leave`: the direct parse must leave it.
 */
function nearShape(r: Random, eol: string, type: string, mime: string[], nested: boolean): { shape: string; leave: boolean; mime?: string[]; body?: Buffer } | null {
  const variant = r.int(100);
  const typeField = (value: string) => [field(r, "Content-Type", value, eol)];
  if (variant < 4) return { shape: "attachment", leave: true, mime: [...mime, field(r, "Content-Disposition", 'attachment; filename="notes.txt"', eol)] };
  if (variant < 6) return { shape: "inline", leave: false, mime: [...mime, field(r, "Content-Disposition", "inline", eol)] };
  if (variant < 8) return { shape: "odd disposition", leave: true, mime: [...mime, field(r, "Content-Disposition", "weird", eol)] };
  if (variant < 10) {
    const body = Buffer.from(`text${eol}--b1${eol}Content-Type: text/plain${eol}${eol}inside${eol}--b1--${eol}`);
    return { shape: "boundary on a text part", leave: true, mime: typeField(`${type}; boundary="b1"`), body };
  }
  if (variant < 12) {
    const body = Buffer.from(
      `--rel${eol}Content-Type: text/html${eol}${eol}<img src="cid:a">${eol}--rel${eol}Content-Type: image/png${eol}Content-ID: <a>${eol}${eol}PNG${eol}--rel--${eol}`,
    );
    return { shape: "multipart/related", leave: true, mime: typeField("multipart/related; boundary=rel"), body };
  }
  if (variant < 14) {
    const body = Buffer.from(
      `--mixed${eol}Content-Type: text/plain${eol}${eol}see attached${eol}--mixed${eol}Content-Type: application/pdf${eol}Content-Transfer-Encoding: base64${eol}${eol}JVBERi0xLjQK${eol}--mixed--${eol}`,
    );
    return { shape: "multipart/mixed", leave: true, mime: typeField("multipart/mixed; boundary=mixed"), body };
  }
  if (variant < 15) return { shape: "multipart without a boundary", leave: true, mime: typeField(r.pick(["multipart/mixed", "multipart/alternative"])) };
  if (variant < 17) {
    const media = r.pick(["application/octet-stream", "message/rfc822", "image/png", "message/delivery-status"]);
    return { shape: media, leave: true, mime: typeField(media) };
  }
  // Not as a part of a multipart: mailparser throws on it there (an uncaught TypeError that ends its worker).
  if (variant < 18 && !nested) return { shape: "no media type", leave: true, mime: typeField("; charset=utf-8") };
  return null;
}

/** A multipart/alternative body of text parts, and what its structure asks of the direct parse. */
function alternative(r: Random, eol: string): { mime: string[]; body: Buffer; expected: Expected; shape: string } {
  const boundary = r.pick(["=_alt_1", "b", "----=_NextPart_000_0012", "a b", "x+y/z"]);
  const quoted = boundary.includes(" ") || r.chance(0.6) ? `"${boundary}"` : boundary;
  const mime = [field(r, "Content-Type", `${r.pick(["multipart/alternative", "Multipart/Alternative"])}; boundary=${quoted}`, eol)];
  const order = r.pick([[false, true], [false, true], [true, false], [false], [true], [false, true, false]]);
  const parts = order.map((html) => textPart(r, eol, html, true));
  const shape = [`alternative of ${parts.map((p) => p.shape).join(" | ")}`];
  let leave = parts.some((p) => p.leave);
  let either = parts.some((p) => p.either);
  const pieces: string[] = [];
  if (r.chance(0.5)) pieces.push(`This is a multi-part message in MIME format.${eol}${eol}`);
  for (const part of parts) {
    const emptyBody = r.pick(["", eol, eol + eol, null, null, null, null]);
    const body = emptyBody ?? part.body.toString("latin1");
    pieces.push(`--${boundary}${eol}${part.mime.join("")}${eol}${body}${eol}`);
    // Lines that look like the boundary and are not (or are, in the splitter's reading: the CR first).
    if (r.chance(0.1)) {
      const near = r.pick([`--${boundary}x`, `--${boundary}-x`, `--${boundary}  `, `--${boundary}--x`, ` --${boundary}`, `\r--${boundary}`]);
      pieces.push(`${near}${eol}`);
      // Part of the body unless it starts with CR; either way a base64 body may no longer decode the same in pieces.
      either = true;
    }
  }
  const structure = r.int(100);
  if (structure < 4) {
    shape.push("no closing boundary");
    leave = true;
  } else {
    const lastLine = structure >= 90; // the closing boundary as the message's last line, without a line break
    pieces.push(`--${boundary}--${lastLine ? "" : eol}`);
    if (lastLine) shape.push("closing boundary without a line break");
    else if (structure < 7) {
      pieces.push(`--${boundary}${eol}Content-Type: text/plain${eol}${eol}after the end${eol}`);
      shape.push("a part after the closing boundary");
      leave = true;
    } else if (structure < 15) pieces.push(`epilogue${eol}`);
  }
  if (structure >= 15 && structure < 18) {
    pieces.splice(0, 0, `--${boundary}--${eol}`);
    shape.push("closing boundary in the preamble");
    leave = true;
  } else if (structure >= 18 && structure < 21) {
    pieces.splice(pieces.length - 1, 0, `--${boundary}${eol}Content-Type: text/plain${eol}--${boundary}${eol}Content-Type: text/plain${eol}${eol}next${eol}`);
    shape.push("a part without the end of its header section");
    leave = true;
  }
  return { mime, body: Buffer.from(pieces.join(""), "latin1"), expected: leave ? "mailparser" : either ? "either" : "direct", shape: shape.join(", ") };
}

/** A message of one text part or an alternative of them, or of a shape near those. */
function message(r: Random): Sample {
  const eol = r.chance(0.75) ? "\r\n" : "\n";
  const shape: string[] = [eol === "\n" ? "LF" : "CRLF"];
  const part = r.chance(0.3) ? null : textPart(r, eol);
  const content = part ? { mime: part.mime, body: part.body, expected: (part.leave ? "mailparser" : part.either ? "either" : "direct") as Expected, shape: part.shape } : alternative(r, eol);
  shape.push(content.shape);
  const mime = r.chance(0.85) ? [field(r, "MIME-Version", "1.0", eol), ...content.mime] : content.mime;
  const fields = [...headerFields(r, eol), ...mime].join("");
  const ending = r.int(100) < 92 ? "blank line" : r.pick(["mbox line", "no header fields", "header section too large", "no end of header section"] as const);
  if (ending !== "blank line") shape.push(ending);
  const head =
    ending === "mbox line"
      ? `From sender@example.org Fri Nov 27 06:00:00 2026${eol}${fields}`
      : ending === "no header fields"
        ? ""
        : ending === "header section too large"
          ? fields + field(r, "X-Padding", "p".repeat(MAX_HEADER_BYTES), eol)
          : fields;
  const expected: Expected =
    ending === "header section too large" || ending === "no end of header section" ? "mailparser" : ending === "no header fields" ? "direct" : content.expected;
  const raw =
    ending === "no end of header section"
      ? Buffer.concat([Buffer.from(head), Buffer.from("X-Last: value")])
      : Buffer.concat([Buffer.from(head), Buffer.from(eol), content.body]);
  return { raw, expected, alternative: part === null, shape: shape.join(", ") };
}

/** A parser worker as parse.ts starts one; `directParse` false: mailparser for every message. */
async function startWorker(directParse: boolean): Promise<Worker> {
  const workerData: ParseWorkerSettings = { maxHeaderBytes: MAX_HEADER_BYTES, maxMimeParts: MAX_MIME_PARTS, directParse };
  const worker = new Worker(new URL("../../src/mail/parse-worker.ts", import.meta.url), { workerData });
  await new Promise((resolve) => worker.once("message", resolve));
  return worker;
}

/** Every answer of one job, to its last stage. */
function answers(worker: Worker, raw: Buffer): Promise<FromParseWorker[]> {
  return new Promise((resolve, reject) => {
    worker.once("error", reject);
    const replies: FromParseWorker[] = [];
    const onMessage = (reply: FromParseWorker) => {
      replies.push(reply);
      const parsed = replies[0];
      const last =
        (reply.kind === "parsed" && !reply.result.ok) ||
        reply.kind === "text" ||
        (reply.kind === "extracted" && parsed?.kind === "parsed" && parsed.result.ok && !(parsed.result.value.html !== null && !parsed.result.value.text.trim()));
      if (!last) return;
      worker.off("message", onMessage).off("error", reject);
      resolve(replies);
    };
    worker.on("message", onMessage);
    worker.postMessage({ kind: "message", raw: new Uint8Array(raw), authentication: null } satisfies ToParseWorker);
  });
}

let direct: Worker;
let mailparser: Worker;
beforeAll(async () => {
  [direct, mailparser] = await Promise.all([startWorker(true), startWorker(false)]);
});
afterAll(async () => {
  await Promise.all([direct?.terminate(), mailparser?.terminate()]);
});

describe("the direct parse against mailparser", () => {
  test(`${MESSAGES} generated messages (seed ${SEED}): the same answers, taken or left as each must be`, async () => {
    const r = random(SEED);
    const counts = { direct: 0, mailparser: 0, either: 0, taken: 0, takenAlternatives: 0, partial: 0 };
    for (let i = 0; i < MESSAGES; i++) {
      const sample = message(r);
      const taken = parseDirect(sample.raw, MAX_HEADER_BYTES, MAX_MIME_PARTS) !== null;
      const context = `message ${i} (${sample.shape}):\n${sample.raw.toString("latin1").slice(0, 2000)}`;
      if (sample.expected !== "either") expect(taken, context).toBe(sample.expected === "direct");
      const [ours, theirs] = await Promise.all([answers(direct, sample.raw), answers(mailparser, sample.raw)]);
      expect(ours, context).toStrictEqual(theirs);
      counts[sample.expected] += 1;
      if (taken) counts.taken += 1;
      if (taken && sample.alternative) counts.takenAlternatives += 1;
      if (theirs[0]?.kind === "parsed" && (!theirs[0].result.ok || theirs[0].result.value.problem !== null)) counts.partial += 1;
    }
    // The corpus covers both sides, and the direct parse takes the bulk of it (the seed fixes these).
    expect(counts.taken).toBeGreaterThan(MESSAGES / 2);
    expect(counts.takenAlternatives).toBeGreaterThan(MESSAGES / 10);
    expect(counts.mailparser).toBeGreaterThan(MESSAGES / 5);
    expect(counts.either).toBeGreaterThan(20);
    expect(counts.partial).toBeGreaterThan(10);
    console.log(`direct parse differential: ${JSON.stringify(counts)}`);
  }, JOB_TIMEOUT_MS);

  test("the extraction and safety corpora composed by nodemailer, and the .eml fixtures: the same answers", async () => {
    const emls = readdirSync(FIXTURES).filter((f) => f.endsWith(".eml"));
    const messages = [...(await corpusMessages()), ...emls.map((f) => ({ group: f, raw: readFileSync(join(FIXTURES, f)) }))];
    let taken = 0;
    for (const { group, raw } of messages) {
      const [ours, theirs] = await Promise.all([answers(direct, raw), answers(mailparser, raw)]);
      expect(ours, `${group}:\n${raw.toString("latin1").slice(0, 2000)}`).toStrictEqual(theirs);
      if (parseDirect(raw, MAX_HEADER_BYTES, MAX_MIME_PARTS) !== null) taken += 1;
    }
    // Every composed fixture is a text part or an alternative of two: all but the .eml files with attachments are taken.
    expect(taken).toBeGreaterThan(messages.length - emls.length);
  }, JOB_TIMEOUT_MS);

  test("the bench message and a message too large to hold whole are taken and left", async () => {
    const raw = Buffer.from(`From: a@example.org\r\nSubject: s\r\nContent-Type: text/plain\r\n\r\n${"line of text\r\n".repeat(100)}`);
    expect(parseDirect(raw, MAX_HEADER_BYTES, MAX_MIME_PARTS)).toMatchObject({ text: "line of text\n".repeat(100), html: null });
    const large = Buffer.concat([raw, Buffer.alloc(1024 * 1024, "x")]);
    expect(parseDirect(large, MAX_HEADER_BYTES, MAX_MIME_PARTS)).toBeNull();
  });
});
