// The line joiner (src/mail/line-joiner.ts) against plain mailparser: over generated messages — base64 parts with
// lines of every length, CRLF and LF, malformed base64 (padding inside, foreign bytes, blank lines, dot-stuffed
// lines), boundaries that look like base64 and lines that look like boundaries, parts that are not base64 — each fed
// in several chunkings, both parsers emit the same headers, text, HTML, attachments (bytes, checksum, size, headers)
// and errors. And it does join: a large attachment reaches the splitter in a few long lines.
import { randomBytes } from "node:crypto";
import { MailParser } from "mailparser";
import { describe, expect, test } from "vitest";
import { joinBase64Lines, joinedLines } from "../../src/mail/line-joiner.js";
import { random, type Random } from "./seeded-random.js";

/** Base64 lines of the bytes, wrapped at one of many widths, with some malformations. */
function base64Body(r: Random, eol: string, boundary: string): string {
  const encoded = r.bytes(r.int(4000)).toString("base64");
  const width = r.pick([76, 76, 64, 4, 1, 3, 77, 1000, 0]);
  const lines: string[] = [];
  for (let at = 0; at < encoded.length; ) {
    const take = width === 0 ? 1 + r.int(120) : width;
    lines.push(encoded.slice(at, at + take));
    at += take;
  }
  const mutations = r.chance(0.5) ? r.int(6) : 0;
  for (let m = 0; m < mutations; m++) {
    const at = r.int(lines.length + 1);
    const line = lines[at] ?? "";
    const mutated = r.pick([
      () => `${line.slice(0, 2)}==${line.slice(2)}`, // padding inside
      () => `${line}=`,
      () => "QQ==",
      () => "",
      () => `${line} `,
      () => ` ${line}`,
      () => `${line.slice(0, 3)}*${line.slice(3)}`,
      () => `\t${line}`,
      () => `.${line}`, // a dot-stuffed line whose dot stayed
      () => `-${line}`,
      () => `--${line}`,
      () => `--${boundary}x`, // looks like the boundary, is not
      () => `\r--${boundary}`, // is none: after a CR the splitter looks two bytes further
      () => `\rx--${boundary}`, // is one
      () => `${line.slice(0, 2)}-${line.slice(2)}`,
      () => `${line.slice(0, 1)}-${line.slice(1)}`,
      () => `${line}\u00e4`,
      () => `${line}\r`,
      () => `\u0000${line}`,
    ])();
    lines.splice(at, 0, mutated);
  }
  return lines.join(eol);
}

/** A random part: its header lines and body, possibly multipart itself; `enclosing`: the boundary around it. */
function part(r: Random, eol: string, depth: number, enclosing: string): string {
  const kind = depth < 2 ? r.int(11) : r.int(9);
  const cte = r.pick(["base64", "base64", "Base64", " BASE64 ", "base64"]);
  const boundary = r.pick(["QUJD", "AAAA", "b64", "=_part", "large", "a+b/c", "----x"]) + String(depth);
  switch (kind) {
    case 0:
      return `Content-Type: text/plain; charset=utf-8${eol}Content-Transfer-Encoding: ${cte}${eol}${eol}${Buffer.from(`h\u00e9llo ${"w ".repeat(r.int(200))}`).toString("base64").replace(/.{76}/g, `$&${eol}`)}`;
    case 1:
      return `Content-Type: text/html; charset=utf-8${eol}Content-Transfer-Encoding: ${cte}${eol}${eol}${base64Body(r, eol, enclosing)}`;
    case 2:
      return `Content-Type: text/plain; format=flowed${eol}Content-Transfer-Encoding: base64${eol}${eol}${Buffer.from(`a flowed line ${eol}continues${eol}`.repeat(1 + r.int(40))).toString("base64").replace(/.{64}/g, `$&${eol}`)}`;
    case 3:
      return `Content-Type: text/plain${eol}Content-Transfer-Encoding: quoted-printable${eol}${eol}caf=C3=A9 =${eol}QUJD${eol}QUJD${eol}`;
    case 4:
      return `Content-Type: text/plain${eol}${eol}QUJD${eol}QUJD${eol}plain lines that look like base64${eol}`;
    case 5:
      return `Content-Type: message/rfc822${eol}Content-Transfer-Encoding: base64${eol}${eol}${Buffer.from(`Subject: inner${eol}${eol}inner body${eol}`).toString("base64")}${eol}`;
    case 6:
      return `Content-Type: image/png${eol}Content-ID: <i${r.int(9)}@x>${eol}Content-Transfer-Encoding: base64${eol}${eol}${base64Body(r, eol, enclosing)}`;
    case 7:
      return `Content-Type: application/octet-stream; name="f${r.int(99)}.bin"${eol}Content-Disposition: attachment${eol}Content-Transfer-Encoding: ${cte}${eol}${eol}${base64Body(r, eol, enclosing)}`;
    case 8:
      // Header lines of base64 letters: a line after a boundary is a header, whatever it looks like.
      return `QUJD${eol}QUJD${eol}${eol}QUJD${eol}QUJD${eol}`;
    default: {
      const children = Array.from({ length: 1 + r.int(4) }, () => part(r, eol, depth + 1, boundary));
      const closing = r.chance(0.85) ? `--${boundary}--${eol}` : "";
      return `Content-Type: multipart/${r.pick(["mixed", "alternative", "related"])}; boundary="${boundary}"${eol}${eol}${children.map((c) => `--${boundary}${eol}${c}${eol}`).join("")}${closing}`;
    }
  }
}

function message(seed: number): Buffer {
  const r = random(seed);
  const eol = r.chance(0.7) ? "\r\n" : "\n";
  const root = r.chance(0.7) ? part(r, eol, 0, "none") : `Content-Type: application/pdf${eol}Content-Transfer-Encoding: base64${eol}${eol}${base64Body(r, eol, "none")}`;
  return Buffer.from(`From: a@example.org${eol}Subject: seed ${seed}${eol}MIME-Version: 1.0${eol}${root}`, "latin1");
}

/** The parse-worker's options (src/mail/parse-worker.ts MESSAGE_OPTIONS). */
const OPTIONS = { skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true, skipHtmlToText: true, maxHeadSize: 64 * 1024, maxChildNodes: 100, ignoreEmbedded: true };

const asJson = (value: unknown) => JSON.parse(JSON.stringify(value, (_, v: unknown) => (v instanceof Map ? [...v] : v))) as unknown;

/**
 * Everything mailparser emits for the message written in chunks cut at `cuts` (each handed to the splitter as it
 * is: the passthrough in front of it regroups nothing when `regroup` is false), with or without the joiner.
 */
async function parseAll(raw: Buffer, cuts: readonly number[], join: boolean, regroup = false): Promise<{ events: unknown[]; lines: number }> {
  const parser = new MailParser(OPTIONS);
  if (!regroup) (parser as unknown as { chunkedPassthrough: { chunkSize: number } }).chunkedPassthrough.chunkSize = 1;
  const lines = countLines(parser);
  if (join) joinBase64Lines(parser);
  const events: unknown[] = [];
  const pending: Promise<void>[] = [];
  parser.on("headers", (headers) => events.push(["headers", asJson(headers)]));
  parser.on("data", (data) => {
    if (data.type === "text") return events.push(["text", data.text, data.html, data.textAsHtml]);
    const { content, release, ...fields } = data;
    const slot = events.push(null) - 1;
    const chunks: Buffer[] = [];
    content.on("data", (c: Buffer) => chunks.push(c));
    pending.push(
      new Promise((resolve) =>
        content.on("end", () => {
          events[slot] = ["attachment", asJson(fields), Buffer.concat(chunks).toString("base64")];
          release();
          resolve();
        }),
      ),
    );
  });
  const ended = new Promise<void>((resolve) => {
    parser.on("end", () => resolve());
    parser.on("error", (e: Error) => {
      events.push(["error", e.message]);
      if ((parser as unknown as { hasFailed: boolean }).hasFailed) resolve();
    });
  });
  let from = 0;
  for (const cut of [...cuts, raw.length]) {
    if (cut <= from) continue;
    if (!parser.write(raw.subarray(from, cut))) await new Promise((resolve) => parser.once("drain", resolve));
    from = cut;
  }
  parser.end();
  await ended;
  await Promise.all(pending);
  return { events, lines: lines.count };
}

/** Counts the lines the parser's splitter handles. */
function countLines(parser: MailParser): { count: number } {
  const counter = { count: 0 };
  const splitter = (parser as unknown as { splitter: { processLine(...args: unknown[]): unknown } }).splitter;
  const processLine = splitter.processLine.bind(splitter);
  splitter.processLine = (...args: unknown[]) => {
    counter.count++;
    return processLine(...args);
  };
  return counter;
}

/** Cuts of several kinds: random small and large pieces, and next to line breaks (after a CR, before an LF). */
function chunkings(raw: Buffer, seed: number): number[][] {
  const r = random(seed * 7919);
  const pieces = (max: number) => {
    const cuts: number[] = [];
    for (let at = 0; at < raw.length; ) cuts.push((at += 1 + r.int(max)));
    return cuts;
  };
  const nearBreaks: number[] = [];
  for (let lf = raw.indexOf(0x0a); lf >= 0; lf = raw.indexOf(0x0a, lf + 1)) if (r.chance(0.3)) nearBreaks.push(lf + r.int(3) - 1);
  return [[], pieces(16), pieces(300), pieces(5000), nearBreaks];
}

const B64 = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=";
/** Boundaries where only a close reading of the splitter finds them, among base64 lines. */
const EDGE_MESSAGES = [
  // After a CR, the splitter looks for the dashes two bytes further: "\rx--b" is a boundary, "\r--b" is not.
  `Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Transfer-Encoding: base64\r\n\r\n${B64}\r\n${B64}\r\n\rx--b\r\nContent-Type: text/plain\r\n\r\nafter\r\n--b--\r\n`,
  `Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Transfer-Encoding: base64\r\n\r\n${B64}\r\n${B64}\r\n\r--b\r\n${B64}\r\n--b--\r\n`,
  `Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Transfer-Encoding: base64\n\n${B64}\n${B64}\n\n--b\nContent-Transfer-Encoding: base64\n\n${B64}\n--b--\n`,
  `Content-Type: multipart/mixed; boundary=QUJD\r\n\r\n--QUJD\r\nContent-Transfer-Encoding: base64\r\n\r\n${B64}\r\n--QUJDx\r\n${B64}\r\n--QUJD--\r\n${B64}\r\n`,
].map((m) => Buffer.from(`Subject: edge\r\n${m}`, "latin1"));

/** Cuts at every line's start, and one and two bytes into it. */
const everyLine = (raw: Buffer, shift: number) => {
  const cuts: number[] = [];
  for (let lf = raw.indexOf(0x0a); lf >= 0; lf = raw.indexOf(0x0a, lf + 1)) cuts.push(lf + 1 + shift);
  return cuts;
};

describe("joinBase64Lines", () => {
  test("mailparser with it emits exactly what it emits without it: boundaries found only by a close reading, chunks cut at every line", async () => {
    for (const [i, raw] of EDGE_MESSAGES.entries()) {
      for (const cuts of [everyLine(raw, -1), everyLine(raw, 0), everyLine(raw, 1), everyLine(raw, 2)]) {
        // Every second or third cut only: a chunk must hold lines to join.
        for (const [every, at] of [[2, 0], [2, 1], [3, 0], [3, 1], [3, 2]] as const) {
          const some = cuts.filter((_, k) => k % every === at);
          expect((await parseAll(raw, some, true)).events, `edge message ${i}`).toEqual((await parseAll(raw, some, false)).events);
        }
      }
    }
  });

  test("mailparser with it emits exactly what it emits without it: 150 generated messages, 5 chunkings each", async () => {
    let joinedSomewhere = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const raw = message(seed);
      for (const cuts of chunkings(raw, seed)) {
        const plain = await parseAll(raw, cuts, false);
        const written = Buffer.from(raw);
        const joined = await parseAll(raw, cuts, true);
        // Lines are joined in the splitter's own buffers, never in what was written to the parser.
        expect(raw.equals(written)).toBe(true);
        expect(joined.events, `seed ${seed}, cuts ${JSON.stringify(cuts.slice(0, 20))}`).toEqual(plain.events);
        if (joined.lines < plain.lines) joinedSomewhere++;
      }
    }
    // The joiner did join lines in a good share of these parses (a test of nothing would pass as well).
    expect(joinedSomewhere).toBeGreaterThan(150);
  }, 120_000);

  test("a large attachment fed as the store feeds it (256 KiB chunks, mailparser's own regrouping): same result, in a few long lines after the first chunk", async () => {
    const base64 = randomBytes(1_500_000).toString("base64").replace(/.{76}/g, "$&\r\n");
    const raw = Buffer.from(
      `Subject: large\r\nContent-Type: multipart/mixed; boundary=large\r\n\r\n--large\r\nContent-Type: text/plain\r\n\r\nsee\r\n` +
        `--large\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64}\r\n--large--\r\n`,
    );
    const cuts = Array.from({ length: Math.ceil(raw.length / 262_144) }, (_, i) => (i + 1) * 262_144);
    const plain = await parseAll(raw, cuts, false, true);
    const joined = await parseAll(raw, cuts, true, true);
    expect(joined.events).toEqual(plain.events);
    expect(plain.lines).toBeGreaterThan(25_000);
    // Lines are joined from the second chunk on (the first starts in the header section): its ~3,400 lines, then a
    // few a chunk.
    expect(joined.lines).toBeLessThan(262_144 / 78 + 5 * cuts.length);
  });

  test("joinedLines: lines after the first, up to the first that may be a boundary, lose their breaks but the last", () => {
    const join = (chunk: string, carried: string | false = false) => joinedLines(Buffer.from(chunk, "latin1"), carried === false ? false : Buffer.from(carried)).toString("latin1");
    expect(join("AB\r\nQUJD\r\nQUJD\r\nQUJD\r\nQU")).toBe("AB\r\nQUJDQUJDQUJD\r\nQU");
    expect(join("AB\nQUJD\nQU==\nQUJD\n--b\nQUJD\nQUJD\n")).toBe("AB\nQUJDQU==QUJD\n--b\nQUJD\nQUJD\n");
    expect(join("AB\nQUJD\r\nQUJD\n\r--b\n")).toBe("AB\nQUJDQUJD\n\r--b\n");
    expect(join("AB\r\nQUJD\r\nQU*D\r\n\r\n \nQUJD\r\n")).toBe("AB\r\nQUJDQU*D QUJD\r\n");
    expect(join("AB\r\nQUJD\r\nQ-JD\r\nQU-D\r\nQUJD\r\n")).toBe("AB\r\nQUJD\r\nQ-JD\r\nQU-D\r\nQUJD\r\n");
    expect(join("AB\r\nQUJD\r\nQUJ-\r\n\r\r--b\r\nQUJD\r\n")).toBe("AB\r\nQUJDQUJ-\r\n\r\r--b\r\nQUJD\r\n");
    // A first line that may be a boundary (what was carried counts): nothing is touched, the part may change there.
    expect(join("-b\r\nQUJD\r\nQUJD\r\n")).toBe("-b\r\nQUJD\r\nQUJD\r\n");
    expect(join("b\r\nQUJD\r\nQUJD\r\n", "\r\n-")).toBe("b\r\nQUJD\r\nQUJD\r\n");
    expect(join("-b\r\nQUJD\r\nQUJD\r\n", "\r\n")).toBe("-b\r\nQUJD\r\nQUJD\r\n");
    expect(join("AB\r\nQUJD\r\nQUJD\r\n", "\r\n")).toBe("AB\r\nQUJDQUJD\r\n");
    expect(join("no line break at all")).toBe("no line break at all");
  });
});
