// The common shape of a message — a single text/plain or text/html part — parsed straight from its bytes, without
// mailparser's streams (a Transform per node, the MIME splitter, its decoders, a turn of the event loop per chunk),
// which cost more CPU than everything else the parser thread does with a 10 KB plain-text message. Every other shape
// is declined (null) and goes through mailparser as before.
//
// The result must be what mailparser yields, so the pieces that decide it are mailparser's own, loaded from where
// mailparser loads them: mailsplit's MimeNode reads the header section (content type, charset, transfer encoding,
// format=flowed, disposition), mailparser's processHeaders decodes the headers (encoded words, addresses, ids,
// dates), libqp decodes quoted-printable, mailsplit's libmime undoes format=flowed and mailparser's iconv-lite
// decodes the charset. What is left here is what mailparser's streams do between them: find the header section
// as the splitter does, hand the body whole to the decoders (they give the same bytes whole as in pieces, for what is
// accepted here), and build the text as mailparser's getTextContent does for a single part.
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
const MimeNodeClass = fromMailsplit("./lib/mime-node.js") as new (parent: null, config: object) => MimeNode;
const libqp = fromMailsplit("libqp") as { decode(s: string): Buffer };
const mailsplitLibmime = new (fromMailsplit("libmime") as { Libmime: new (config: object) => { decodeFlowed(s: string, delSp: boolean): string } }).Libmime({});
const iconv = fromMailparser("iconv-lite") as { getCodec(name: string): Codec; decode(bytes: Buffer, name: string): string };
const { MailParser } = fromMailparser("mailparser") as { MailParser: { prototype: object } };
const mailparserLibmime = new (fromMailparser("libmime") as { Libmime: new (config: object) => unknown }).Libmime({});
/** mailparser's header decoding (a method reading nothing of the parser but its libmime), on an object of its own. */
const headerDecoder = Object.assign(Object.create(MailParser.prototype) as { processHeaders(lines: unknown[]): MailparserHeaders }, {
  libmime: mailparserLibmime,
});

/** Larger messages go through mailparser, which streams them: this parse holds the message and its text whole. */
export const MAX_DIRECT_BYTES = 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;
/** Charsets mailparser leaves to UTF-8 decoding (its test, on the name with all but letters and digits removed). */
const UNDECODED_CHARSETS = new Set(["ascii", "usascii", "utf8"]);
/** Charsets mailparser decodes with encoding-japanese instead of iconv-lite. */
const JAPANESE_CHARSET = /^jis|^iso-?2022-?jp|^EUCJP/i;

/**
 * The message parsed as mailparser would parse it (with the parser worker's options), or null when it is not a
 * single text/plain or text/html part this parse is sure of: mailparser parses those.
 */
export function parseDirect(raw: Buffer, maxHeaderBytes: number): DirectParse | null {
  if (raw.byteLength > MAX_DIRECT_BYTES) return null;
  const bodyStart = headerSectionEnd(raw, maxHeaderBytes);
  if (bodyStart < 0) return null;
  const node = new MimeNodeClass(null, {});
  node.addHeaderChunk(raw.subarray(0, bodyStart));
  node.parseHeaders();
  // A boundary on a part that is not multipart still makes the splitter cut at it.
  if (node.multipart || node._boundary) return null;
  if (node.contentType !== "text/plain" && node.contentType !== "text/html") return null;
  if (node.disposition !== false && node.disposition !== "inline") return null;
  const content = textContent(node, raw.subarray(bodyStart));
  if (content === null) return null;
  const headers = headerDecoder.processHeaders(node.headers.getList());
  // mailparser's getTextContent for a single part: an empty part yields nothing; an HTML one yields empty text.
  if (node.contentType === "text/plain") return { headers, text: content, html: null };
  return content ? { headers, text: "", html: content } : { headers, text: "", html: null };
}

/**
 * Where the body starts: after the first line that is blank (LF, or CR LF), as the splitter reads it; -1 when there
 * is none, or the header section with it is over the limit (the splitter fails such a message).
 */
function headerSectionEnd(raw: Buffer, maxHeaderBytes: number): number {
  for (let start = 0; start <= maxHeaderBytes; ) {
    const lf = raw.indexOf(LF, start);
    if (lf < 0 || lf + 1 > maxHeaderBytes) return -1;
    if (lf === start || (lf === start + 1 && raw[start] === CR)) return lf + 1;
    start = lf + 1;
  }
  return -1;
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
