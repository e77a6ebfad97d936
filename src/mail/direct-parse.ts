// The common shape of a message — a single text/plain or text/html part, or a multipart/alternative of such parts —
// parsed straight from its bytes, without mailparser's streams (a Transform per node, the MIME splitter, its
// decoders, a turn of the event loop per chunk), which cost about as much CPU as everything else the parser thread
// does with a 10 KB plain-text message. Every other shape is declined (null) and goes through mailparser as before.
//
// The result must be what mailparser yields, so the pieces that decide it are mailparser's own, loaded from where
// mailparser loads them: mailsplit's MimeNode reads each header section (content type, charset, transfer encoding,
// format=flowed, disposition, boundary) and mailsplit's boundary test each line of a multipart, mailparser's
// processHeaders decodes the headers (encoded words, addresses, ids, dates), libqp decodes quoted-printable,
// mailsplit's libmime undoes format=flowed and mailparser's iconv-lite decodes the charset. What is left here is what
// the streams do between them: cut the message where the splitter cuts it (the header section at its first blank
// line, a part's body without the line break before its boundary), hand each body whole to the decoders (they give the
// same bytes whole as in pieces, for what is accepted here), and join the text and HTML as mailparser's
// getTextContent does for these shapes.
// test/unit/direct-parse.test.ts holds this deep-equal to the mailparser path over a generated corpus.
// Plain erasable TypeScript: the parser worker loads it without tsx.
import { createRequire } from "node:module";

/** The headers as mailparser's `headers` event gives them. */
export type MailparserHeaders = Map<string, unknown>;

/** What mailparser yields for a message the direct parse accepts. */
export interface DirectParse {
  readonly headers: MailparserHeaders;
  /** mailparser's `text` ("" when it has none). */
  readonly text: string;
  /** mailparser's `html`, or null when it has none. */
  readonly html: string | null;
}

interface MimeNode {
  addHeaderChunk(line: Buffer): void;
  parseHeaders(): void;
  headers: { getList(): unknown[] };
  contentType: string | false;
  charset: string | false;
  encoding: string;
  disposition: string | false;
  multipart: string | false;
  _boundary: Buffer | false;
  flowed: boolean;
  delSp: boolean;
}

interface Codec {
  /** Only iconv-lite's single-byte codecs have it: they decode the same in pieces as whole. */
  decodeBuf?: unknown;
}

const fromMailparser = createRequire(import.meta.resolve("mailparser"));
const fromMailsplit = createRequire(fromMailparser.resolve("@zone-eu/mailsplit"));
const MimeNodeClass = fromMailsplit("./lib/mime-node.js") as new (parent: MimeNode | null, config: object) => MimeNode;
const libqp = fromMailsplit("libqp") as { decode(s: string): Buffer };
const mailsplitLibmime = new (fromMailsplit("libmime") as { Libmime: new (config: object) => { decodeFlowed(s: string, delSp: boolean): string } }).Libmime({});
const iconv = fromMailparser("iconv-lite") as { getCodec(name: string): Codec; decode(bytes: Buffer, name: string): string };
const { MailParser } = fromMailparser("mailparser") as { MailParser: { prototype: object } };
const mailparserLibmime = new (fromMailparser("libmime") as { Libmime: new (config: object) => unknown }).Libmime({});
/** mailparser's header decoding (a method reading nothing of the parser but its libmime), on an object of its own. */
const headerDecoder = Object.assign(Object.create(MailParser.prototype) as { processHeaders(lines: unknown[]): MailparserHeaders }, {
  libmime: mailparserLibmime,
});

const Splitter = (fromMailsplit("@zone-eu/mailsplit") as { Splitter: { prototype: object } }).Splitter;
/**
 * mailsplit's test of a line against the boundaries around the part it is in (1: next part, 2: end of its parts,
 * 3: next sibling, 4: end of its parent's parts), a method reading nothing of the splitter but `node`.
 */
const boundaryTest = Object.create(Splitter.prototype) as { node: MimeNode | null; checkBoundary(line: Buffer): number | false };

/** Larger messages go through mailparser, which streams them: this parse holds the message and its text whole. */
export const MAX_DIRECT_BYTES = 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;
const EMPTY = Buffer.alloc(0);
/** Charsets mailparser leaves to UTF-8 decoding (its test, on the name with all but letters and digits removed). */
const UNDECODED_CHARSETS = new Set(["ascii", "usascii", "utf8"]);
/** Charsets mailparser decodes with encoding-japanese instead of iconv-lite. */
const JAPANESE_CHARSET = /^jis|^iso-?2022-?jp|^EUCJP/i;

/** A text part and its body, still transfer-encoded. */
interface TextPart {
  readonly node: MimeNode;
  readonly body: Buffer;
}

/**
 * The message parsed as mailparser would parse it (with the parser worker's options), or null when it is not a
 * single text/plain or text/html part, or a multipart/alternative of such parts, that this parse is sure of:
 * mailparser parses those.
 */
export function parseDirect(raw: Buffer, maxHeaderBytes: number, maxMimeParts: number): DirectParse | null {
  if (raw.byteLength > MAX_DIRECT_BYTES) return null;
  const bodyStart = headerSectionEnd(raw, 0, maxHeaderBytes);
  if (bodyStart < 0) return null;
  const root = mimeNode(null, raw.subarray(0, bodyStart));
  const parts = root.multipart ? alternativeParts(root, raw, bodyStart, maxHeaderBytes, maxMimeParts) : [{ node: root, body: raw.subarray(bodyStart) }];
  if (parts === null) return null;
  // mailparser's getTextContent: an empty part yields nothing; with the alternative (or HTML alone), text parts
  // give the text and HTML parts the HTML, no text is made of HTML nor HTML of text.
  const text: string[] = [];
  const html: string[] = [];
  for (const { node, body } of parts) {
    if (!isTextPart(node)) return null;
    const content = textContent(node, body);
    if (content === null) return null;
    if (content) (node.contentType === "text/plain" ? text : html).push(content);
  }
  return { headers: headerDecoder.processHeaders(root.headers.getList()), text: text.join("\n"), html: html.length > 0 ? html.join("<br/>\n") : null };
}

/** A part read from its header section, as the splitter reads it. */
function mimeNode(parent: MimeNode | null, headerSection: Buffer): MimeNode {
  const node = new MimeNodeClass(parent, {});
  node.addHeaderChunk(headerSection);
  node.parseHeaders();
  return node;
}

/** Whether mailparser takes the part for inline text (and the splitter looks for no boundary of its own in it). */
function isTextPart(node: MimeNode): boolean {
  if (node.multipart || node._boundary) return false;
  if (node.contentType !== "text/plain" && node.contentType !== "text/html") return false;
  return node.disposition === false || node.disposition === "inline";
}

/**
 * Where the header section that starts at `start` ends: after its first line that is blank (LF, or CR LF), as the
 * splitter reads it; -1 when there is none, or the header section with it is over the limit (the splitter fails
 * such a message).
 */
function headerSectionEnd(raw: Buffer, start: number, maxHeaderBytes: number): number {
  for (let line = start; line - start <= maxHeaderBytes; ) {
    const lf = raw.indexOf(LF, line);
    if (lf < 0 || lf + 1 - start > maxHeaderBytes) return -1;
    if (lf === line || (lf === line + 1 && raw[line] === CR)) return lf + 1;
    line = lf + 1;
  }
  return -1;
}

/**
 * The parts of a multipart/alternative message, cut where the splitter cuts them; null for anything else or anything
 * unsure: a part with a boundary of its own, a part whose header section does not end, a boundary line in the
 * preamble other than the first part's or any in the epilogue, no closing boundary.
 */
function alternativeParts(root: MimeNode, raw: Buffer, bodyStart: number, maxHeaderBytes: number, maxMimeParts: number): TextPart[] | null {
  if (root.multipart !== "alternative" || !root._boundary) return null;
  const parts: TextPart[] = [];
  /** The part whose body is being read (from bodyOf), null in the preamble and the epilogue. */
  let part: MimeNode | null = null;
  let bodyOf = 0;
  let closed = false;
  for (let line = bodyStart; line < raw.length; ) {
    const next = raw.indexOf(LF, line) + 1 || raw.length;
    boundaryTest.node = part ?? root;
    const boundary = boundaryTest.checkBoundary(raw.subarray(line, next));
    if (boundary === false) {
      line = next;
      continue;
    }
    // In the preamble only the first part's boundary (1); in a part the next part's (3) or the closing one (4).
    if (closed || (part === null ? boundary !== 1 : boundary !== 3 && boundary !== 4)) return null;
    if (part !== null) parts.push({ node: part, body: partBody(raw, bodyOf, line, boundary === 3) });
    if (boundary === 4) {
      closed = true;
      part = null;
      line = next;
      continue;
    }
    // The splitter fails a message with more nodes than the limit: the message itself and its parts.
    if (parts.length + 2 > maxMimeParts) return null;
    const headerEnd = headerSectionEnd(raw, next, maxHeaderBytes);
    if (headerEnd < 0) return null;
    // A boundary line among the part's header lines would end it before its header section does.
    for (let headerLine = next; headerLine < headerEnd; headerLine = raw.indexOf(LF, headerLine) + 1) {
      if (boundaryTest.checkBoundary(raw.subarray(headerLine, raw.indexOf(LF, headerLine) + 1)) !== false) return null;
    }
    part = mimeNode(root, raw.subarray(next, headerEnd));
    if (part._boundary) return null;
    bodyOf = line = headerEnd;
  }
  return closed ? parts : null;
}

/**
 * The body of a part that ends where the boundary line at `end` starts, as the splitter passes it on: without the
 * line break before the boundary. A body that is one empty line is that line before the next part's boundary
 * (`nextPart`, where the splitter flushes what it holds) and nothing before the closing one.
 */
function partBody(raw: Buffer, start: number, end: number, nextPart: boolean): Buffer {
  let cut = end;
  if (cut > start && raw[cut - 1] === LF) {
    cut -= 1;
    if (raw[cut - 1] === CR) cut -= 1;
  }
  if (cut > start) return raw.subarray(start, cut);
  return nextPart ? raw.subarray(start, end) : EMPTY;
}

/** The part's text as mailparser builds it (decoded, unflowed, from its charset, LF line breaks); null when unsure. */
function textContent(node: MimeNode, body: Buffer): string | null {
  let bytes = transferDecoded(node.encoding, body);
  if (bytes === null) return null;
  if (node.flowed && bytes.byteLength > 0) bytes = Buffer.from(mailsplitLibmime.decodeFlowed(bytes.toString("binary"), node.delSp), "binary");
  const text = fromCharset(node.charset || "utf-8", bytes);
  return text === null ? null : text.replace(/\r?\n/g, "\n");
}

/** The body as mailsplit's decoder for the transfer encoding yields it; null for base64 that might decode differently whole. */
function transferDecoded(encoding: string, body: Buffer): Buffer | null {
  if (encoding === "quoted-printable") return body.byteLength > 0 ? libqp.decode(body.toString()) : body;
  if (encoding !== "base64") return body;
  // libbase64's decoder keeps what is in its alphabet (high bits stripped), and decodes it four characters at a
  // time as the pieces come: the same as whole only when padding is at the end and nothing is left over.
  const data = body.toString("ascii").replace(/[^a-zA-Z0-9+/=]/g, "");
  const padding = data.indexOf("=");
  if (data.length % 4 !== 0 || (padding >= 0 && padding < data.length - 2) || /=[^=]/.test(data)) return null;
  return Buffer.from(data, "base64");
}

/**
 * Text from the bytes in the part's charset, as mailparser decodes it: UTF-8 for the names it leaves alone and for
 * those iconv-lite does not know; iconv-lite's single-byte codecs otherwise. Null for the rest (multi-byte charsets
 * decoded in pieces, Japanese ones through another library).
 */
function fromCharset(charset: string, bytes: Buffer): string | null {
  if (UNDECODED_CHARSETS.has(charset.toLowerCase().replace(/[^a-z0-9]+/g, ""))) return bytes.toString();
  const name = charset.trim().toLowerCase();
  if (JAPANESE_CHARSET.test(name)) return null;
  let codec: Codec;
  try {
    codec = iconv.getCodec(name);
  } catch {
    return bytes.toString();
  }
  return codec.decodeBuf ? iconv.decode(bytes, name) : null;
}
