// The parser worker thread (see parse.ts): jobs in (a raw message, HTML to make text of, or a parsed message to
// extract from), results out. Node loads this file with its own type stripping, outside tsx, so it uses no
// TypeScript syntax that needs compiling, imports only packages statically (our modules as types only), and loads
// the extraction modules (plain erasable TypeScript too) through a resolve hook that maps their ".js" imports to
// the ".ts" files, as tsx does elsewhere.
import { randomUUID } from "node:crypto";
import { registerHooks } from "node:module";
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
import type { Extracted } from "../extraction/index.js";
import type {
  DerivedText,
  ParsedAddress,
  ParsedAttachment,
  ParsedMessage,
  ParseWorkerJob,
  ParseWorkerResult,
  ParseWorkerSettings,
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

/** HTML → text, as mailparser does it for a single-part HTML message. */
const HTML_TO_TEXT_OPTIONS: MailParserOptions = {
  ...BASE_OPTIONS,
  // html-to-text needs about 50 bytes of heap per byte of HTML: longer HTML gets no text made from it.
  maxHtmlLengthToParse: 1024 * 1024,
};

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

parentPort!.on("message", (job: ParseWorkerJob) => {
  const work: Promise<ParsedMessage | DerivedText | Extracted> =
    job.kind === "message"
      ? parse(Buffer.from(job.raw.buffer, job.raw.byteOffset, job.raw.byteLength))
      : job.kind === "html-to-text"
        ? textFromHtml(job.html)
        : Promise.resolve().then(() => extractMessage(job.input));
  work.then(
    // Attachments are moved to the parent, not copied: a large one would otherwise be held twice.
    (value) => parentPort!.postMessage({ ok: true, value } satisfies ParseWorkerResult<typeof value>, transferable(value)),
    (e: unknown) =>
      parentPort!.postMessage({ ok: false, error: e instanceof Error ? e.message : String(e) } satisfies ParseWorkerResult<never>),
  );
});

/** The buffers of a result's attachments that own their memory whole (small ones share Node's pool: copied). */
function transferable(value: ParsedMessage | DerivedText | Extracted): ArrayBuffer[] {
  if (!("attachments" in value)) return [];
  return value.attachments
    .map((a) => a.content)
    .filter((c) => c.byteOffset === 0 && c.byteLength === c.buffer.byteLength && c.buffer instanceof ArrayBuffer)
    .map((c) => c.buffer as ArrayBuffer);
}

// Loaded and ready: from here on, a parse's time budget is the parse's alone.
parentPort!.postMessage("ready");

/** Text from HTML the way mailparser makes it for a message that is a single HTML part. */
async function textFromHtml(html: string): Promise<DerivedText> {
  const derived = await collect(Buffer.from(`Content-Type: text/html; charset=utf-8\r\n\r\n${html}`), HTML_TO_TEXT_OPTIONS);
  // On a problem mailparser's text is a placeholder of its own ("Invalid HTML content"), not the sender's.
  if (derived.problems.length > 0) return { text: "", problem: `text from HTML: ${derived.problems.join("; ")}` };
  return { text: clean(derived.text), problem: null };
}

async function parse(raw: Buffer): Promise<ParsedMessage> {
  const message = await collect(raw, MESSAGE_OPTIONS);
  const { headers, problems } = message;
  const ids = (name: string) => messageIds(headers.get(name));
  return {
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
}

interface Collected {
  readonly headers: Headers;
  readonly text: string;
  readonly html: string | null;
  readonly attachments: ParsedAttachment[];
  readonly problems: string[];
}

function collect(raw: Buffer, options: MailParserOptions): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const parser = new MailParser(options);
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
    parser.end(raw);
  });
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
