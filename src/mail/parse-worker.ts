// The parser worker thread (see parse.ts): jobs in (a raw message, whole or a chunk at a time, or HTML to make text
// of), results out, stage by stage. Node loads this file with its own type stripping, outside tsx, so it uses no
// TypeScript syntax that needs compiling, imports only packages statically (our modules as types only), and loads
// the extraction modules (plain erasable TypeScript too) through a resolve hook that maps their ".js" imports to
// the ".ts" files, as tsx does elsewhere.
import { randomUUID } from "node:crypto";
import { createRequire, registerHooks } from "node:module";
import { parentPort, workerData } from "node:worker_threads";
import {
  MailParser,
  type AddressObject,
  type AttachmentStream,
  type EmailAddress,
  type Headers,
  type MailParserOptions,
  type MessageText,
} from "mailparser";
import type { Extracted, ExtractionInput, SenderAuthentication } from "../extraction/index.js";
import type { DirectParse } from "./direct-parse.js";
import type {
  DerivedText,
  FromParseWorker,
  ParsedAddress,
  ParsedAttachment,
  ParsedMessage,
  ParseWorkerResult,
  ParseWorkerSettings,
  ToParseWorker,
} from "./parse.js";

const settings = workerData as ParseWorkerSettings;

/** Options mailparser hands to its MIME splitter (mailsplit); @types/mailparser does not list them. */
interface SplitterOptions {
  maxHeadSize: number;
  maxChildNodes: number;
  ignoreEmbedded: boolean;
}

const BASE_OPTIONS: MailParserOptions & SplitterOptions = {
  // The spec's text is the sender's; HTML made from it would be ours, with links we never vetted.
  skipTextToHtml: true,
  skipTextLinks: true,
  skipImageLinks: true,
  maxHeadSize: settings.maxHeaderBytes,
  maxChildNodes: settings.maxMimeParts,
  // A forwarded message/rfc822 part stays one attachment instead of being merged into this message's body.
  ignoreEmbedded: true,
};

/**
 * The message itself: text from its text parts only. mailparser makes text from HTML just for a message whose
 * root is HTML, and for a long HTML root it drops the HTML altogether; deriving text in a job of its own keeps
 * the HTML whole and gives text to HTML-only messages of any structure.
 */
const MESSAGE_OPTIONS: MailParserOptions = { ...BASE_OPTIONS, skipHtmlToText: true };

/** html-to-text needs about 50 bytes of heap per byte of HTML: longer HTML gets no text made from it. */
const MAX_HTML_TO_TEXT_CHARS = 1024 * 1024;

/**
 * HTML → text as mailparser makes it (`htmlToText(html)`, html-to-text's defaults), from the html-to-text mailparser
 * itself loads, compiled once: compiling its selectors each time was most of what a short conversion cost.
 */
const htmlToText = (
  createRequire(import.meta.resolve("mailparser"))("html-to-text") as { compile(): (html: string) => string }
).compile();

/** mailparser's separator between the HTML of successive body parts. */
const HTML_PART_SEPARATOR = "<br/>\n";
/** Most references kept (the newest): enough to thread, bounded however long the header is. */
const MAX_REFERENCES = 100;
/** Longest Message-ID kept (RFC 5322 line limit); a longer one is treated as absent. */
const MAX_MESSAGE_ID = 998;

registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (e) {
      if (/^\.\.?\/.*\.js$/.test(specifier)) return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
      throw e;
    }
  },
});
const { extractMessage } = await import("../extraction/index.js");
const { hasContent, headerEnd } = await import("./header-section.js");
const { joinBase64Lines } = await import("./line-joiner.js");
const { parseDirect } = await import("./direct-parse.js");
(await import("../runtime/thread-priority.js")).lowerThreadPriority();

/** The streamed message being parsed: where its next chunk goes. */
let streaming: { write(bytes: Uint8Array): void; end(): void } | null = null;

parentPort!.on("message", (job: ToParseWorker) => {
  switch (job.kind) {
    case "message":
      void parseMessage(job.raw, job.authentication);
      return;
    case "chunk":
      streaming?.write(job.bytes);
      return;
    case "end":
      streaming?.end();
      return;
    case "html-to-text":
      void settle(textFromHtml(job.html)).then((result) => post({ kind: "text", result }));
  }
});

function post(reply: FromParseWorker, transfer: ArrayBuffer[] = []): void {
  parentPort!.postMessage(reply, transfer);
}

function settle<T>(work: Promise<T>): Promise<ParseWorkerResult<T>> {
  return work.then(
    (value) => ({ ok: true, value }) as const,
    (e: unknown) => ({ ok: false, error: e instanceof Error ? e.message : String(e) }) as const,
  );
}

/** Parses, then extracts, then makes text of the HTML of an HTML-only message; each stage answered as it ends. */
async function parseMessage(raw: Uint8Array | null, authentication: SenderAuthentication | null): Promise<void> {
  const parsed = await settle(parse(raw));
  // Attachments are moved to the parent, not copied: a large one would otherwise be held twice.
  post({ kind: "parsed", result: parsed }, parsed.ok ? transferable(parsed.value) : []);
  if (!parsed.ok) return;
  const email = parsed.value;
  // Text parts are the sender's words; text made from HTML-only mail is not (extraction reads the HTML then).
  const input: ExtractionInput = {
    text: email.text.trim() ? email.text : null,
    html: email.html,
    subject: email.subject,
    from: email.from?.email ?? null,
    replyTo: email.replyTo?.email ?? null,
    authentication,
  };
  post(extractedReply(await settle(Promise.resolve().then(() => extractMessage(input))), email.text));
  if (email.html !== null && !email.text.trim()) post({ kind: "text", result: await settle(textFromHtml(email.html)) });
}

/** Extraction's answer, without its texts that are the parsed text trimmed (the parent has that text: TrimmedText). */
function extractedReply(result: ParseWorkerResult<Extracted>, text: string): FromParseWorker {
  if (!result.ok) return { kind: "extracted", result };
  const trimmed = text.trim();
  const { replyText, safeText } = result.value;
  const trimmedText = { replyText: replyText.length > 0 && replyText === trimmed, safeText: safeText.length > 0 && safeText === trimmed };
  if (!trimmedText.replyText && !trimmedText.safeText) return { kind: "extracted", result };
  const value = { ...result.value, replyText: trimmedText.replyText ? "" : replyText, safeText: trimmedText.safeText ? "" : safeText };
  return { kind: "extracted", result: { ok: true, value }, trimmedText };
}

/** The buffers of a message's attachments that own their memory whole (small ones share Node's pool: copied). */
function transferable(value: ParsedMessage): ArrayBuffer[] {
  return value.attachments
    .map((a) => a.content)
    .filter((c) => c.byteOffset === 0 && c.byteLength === c.buffer.byteLength && c.buffer instanceof ArrayBuffer)
    .map((c) => c.buffer as ArrayBuffer);
}

/**
 * Whether a message's body holds anything but white space, learnt as its bytes pass: the header section (bounded by
 * the SMTP limit) is kept until its end is found, the rest is only looked at.
 */
class BodyProbe {
  /** The message's first bytes while the end of its header section is not among them. */
  head: Buffer | null = null;
  inBody = false;
  content = false;

  write(bytes: Buffer): void {
    if (this.content) return;
    if (this.inBody) {
      this.content = hasContent(bytes);
      return;
    }
    const head = this.head ? Buffer.concat([this.head, bytes]) : bytes;
    const end = headerEnd(head, settings.maxHeaderBytes);
    // Not found yet, and the limit not reached: the blank line may come with the next chunk.
    if (end === head.length && head.length < settings.maxHeaderBytes) {
      this.head = head;
      return;
    }
    this.inBody = true;
    this.head = null;
    this.content = hasContent(head.subarray(end));
  }
}

// Loaded and ready: from here on, a parse's time budget is the parse's alone.
parentPort!.postMessage("ready");

/**
 * Text from HTML the way mailparser makes it for a message that is a single HTML part: its line breaks as "\n",
 * then html-to-text, with mailparser's two problems (where its text would be a placeholder of its own).
 */
async function textFromHtml(html: string): Promise<DerivedText> {
  const content = html.replace(/\r?\n/g, "\n");
  if (content.length > MAX_HTML_TO_TEXT_CHARS) return { text: "", problem: `text from HTML: HTML too long for parsing ${content.length} bytes` };
  try {
    return { text: content ? clean(htmlToText(content)) : "", problem: null };
  } catch {
    return { text: "", problem: "text from HTML: Failed to parse HTML" };
  }
}

/** The message parsed from its text parts, whole or from the chunks that follow; a body that parsed into nothing is partial. */
async function parse(raw: Uint8Array | null): Promise<ParsedMessage> {
  const probe = new BodyProbe();
  const whole = raw && Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const message = (whole && parsedDirectly(whole, probe)) ?? (await collect(whole, MESSAGE_OPTIONS, probe));
  const { headers, problems } = message;
  const ids = (name: string) => messageIds(headers.get(name));
  const parsed: ParsedMessage = {
    messageId: ids("message-id")[0] ?? null,
    inReplyTo: ids("in-reply-to")[0] ?? null,
    references: ids("references").slice(-MAX_REFERENCES),
    subject: clean(typeof headers.get("subject") === "string" ? (headers.get("subject") as string) : ""),
    from: addresses(headers.get("from"))[0] ?? null,
    to: addresses(headers.get("to")),
    cc: addresses(headers.get("cc")),
    replyTo: addresses(headers.get("reply-to"))[0] ?? null,
    text: clean(message.text),
    html: message.html === null ? null : clean(message.html),
    attachments: message.attachments,
    problem: problems.length > 0 ? problems.join("; ") : null,
  };
  // A body with content that yielded nothing (a multipart without a boundary, say): the raw form must be kept.
  const lost = parsed.problem === null && !parsed.text.trim() && parsed.html === null && parsed.attachments.length === 0 && probe.content;
  return lost ? { ...parsed, problem: "no readable body part" } : parsed;
}

/** A message of the common shape (one text part) parsed without mailparser's streams; null for any other. */
function parsedDirectly(raw: Buffer, probe: BodyProbe): Collected | null {
  if (settings.directParse === false) return null;
  let direct: DirectParse | null;
  try {
    direct = parseDirect(raw, settings.maxHeaderBytes, settings.maxMimeParts);
  } catch {
    // Whatever mailparser's pieces throw on, mailparser itself answers for.
    direct = null;
  }
  if (!direct) return null;
  probe.write(raw);
  return { headers: direct.headers as Headers, text: direct.text, html: direct.html, attachments: [], problems: [] };
}

interface Collected {
  readonly headers: Headers;
  readonly text: string;
  readonly html: string | null;
  readonly attachments: ParsedAttachment[];
  readonly problems: string[];
}

/**
 * Runs mailparser over a message: whole, or (raw null) over the chunks the parent sends, each asked for once the
 * parser has taken the one before, so a chunk or two of the message are held at a time.
 */
function collect(raw: Buffer | null, options: MailParserOptions, probe?: BodyProbe): Promise<Collected> {
  const collected = new Promise<Collected>((resolve, reject) => {
    const parser = new MailParser(options);
    joinBase64Lines(parser);
    // mailparser turns each text/plain part beside an HTML one into HTML ("" with skipTextToHtml) and joins all
    // with a separator, so a text part leaves a stray "<br/>" in the sender's HTML. A marker no message can
    // contain stands in for those pieces, and is removed with its separator.
    const noHtml = `\u0000${randomUUID()}\u0000`;
    (parser as unknown as { textToHtml(): string }).textToHtml = () => noHtml;
    let headers: Headers = new Map();
    let body: MessageText | undefined;
    const attachments: ParsedAttachment[] = [];
    const problems: string[] = [];

    parser.on("headers", (h: Headers) => (headers = h));
    parser.on("data", (part: AttachmentStream | MessageText) => {
      if (part.type === "text") {
        body = part;
        return;
      }
      const chunks: Buffer[] = [];
      part.content.on("data", (chunk: Buffer) => chunks.push(chunk));
      part.content.on("end", () => {
        attachments.push({
          filename: part.filename ? clean(utf8FromBinary(part.filename)) : null,
          contentType: clean(part.contentType),
          content: Buffer.concat(chunks),
        });
        part.release();
      });
    });
    parser.on("error", (e: Error) => {
      // Some errors only lose a piece (HTML too long to turn into text) and parsing goes on; a failed MIME split
      // stops it, and mailparser says so on its hasFailed flag.
      if ((parser as unknown as { hasFailed: boolean }).hasFailed) reject(e);
      else problems.push(e.message);
    });
    parser.on("end", () =>
      resolve({
        headers,
        text: body?.text ?? "",
        html: typeof body?.html === "string" ? withoutPieces(body.html, noHtml) : null,
        attachments,
        problems,
      }),
    );
    if (raw) {
      probe?.write(raw);
      parser.end(raw);
      return;
    }
    const more = () => post({ kind: "more" });
    streaming = {
      write(bytes) {
        const chunk = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        probe?.write(chunk);
        if (parser.write(chunk)) more();
        else parser.once("drain", more);
      },
      end: () => parser.end(),
    };
    more();
  });
  // Chunks that were on their way when the parse ended are dropped.
  return raw ? collected : collected.finally(() => (streaming = null));
}

function withoutPieces(html: string, piece: string): string {
  return html
    .split(HTML_PART_SEPARATOR)
    .filter((p) => p !== piece)
    .join(HTML_PART_SEPARATOR);
}

/**
 * mailsplit reads header parameters byte for byte, so a filename sent as raw UTF-8 (RFC 6532) arrives as Latin-1
 * mojibake; mailparser re-decodes its other headers this way, not the filename.
 */
function utf8FromBinary(s: string): string {
  if (!/[\x80-\xff]/.test(s) || /[^\x00-\xff]/.test(s)) return s;
  const decoded = Buffer.from(s, "latin1").toString("utf8");
  return decoded.includes("\uFFFD") ? s : decoded;
}

function messageIds(value: unknown): string[] {
  const text = Array.isArray(value) ? value.join(" ") : typeof value === "string" ? value : "";
  return (text.match(/<[^<>\s]+>/g) ?? []).filter((id) => id.length <= MAX_MESSAGE_ID).map(clean);
}

/** The mailboxes of an address header (groups flattened); entries without an address are dropped. */
function addresses(value: unknown): ParsedAddress[] {
  const objects = (Array.isArray(value) ? value : value ? [value] : []) as AddressObject[];
  const flat = (list: EmailAddress[]): EmailAddress[] => list.flatMap((a) => (a.group ? flat(a.group) : [a]));
  return flat(objects.flatMap((o) => o.value ?? [])).flatMap((a) => {
    const email = clean(a.address ?? "").trim();
    if (!email) return [];
    const name = clean(a.name ?? "").trim();
    return [name ? { email, name } : { email }];
  });
}

/**
 * Text PostgreSQL can store: no NUL characters (text and jsonb refuse them), and no lone UTF-16 surrogates
 * (a jsonb value refuses their escapes); decoded headers and bodies can contain both.
 */
function clean(s: string): string {
  return s.replace(/\u0000/g, "").replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}
