// What a forward sends: the original message of a mailbox, quoted in the body with its clean attachments (inline),
// or whole as a message/rfc822 attachment (attachment), which needs every attachment of it clean. The original's
// bytes as they arrived are not kept after an inbound message is stored, so an inbound original travels rebuilt from
// what was stored (its addresses, date, subject, ids, text, HTML and attachments); an outbound one as it was sent.
import { Attachment, Submission } from "../db/entities/index.js";
import type { MessageRow, StoredAddress } from "../db/entities/message.js";
import type { TenantStore } from "../db/tenant-store.js";
import { Unprocessable } from "../errors.js";
import { composeMime, type ComposeAttachment } from "./compose.js";
import { mediaTypeOf } from "./media-type.js";
import { prefixedSubject } from "./reply.js";

export type ForwardMode = "inline" | "attachment";

/** The original with what a forward may take of it. */
export interface ForwardOriginal {
  readonly message: MessageRow;
  /** Its attachments in order, with their bytes and scan states. */
  readonly attachments: readonly { readonly filename: string; readonly contentType: string; readonly content: Uint8Array; readonly scanState: string }[];
  /** The bytes an outbound original was sent as, while its submission is kept; null otherwise. */
  readonly sent: Buffer | null;
}

/** What the forward sends and stores. */
export interface ForwardContent {
  readonly subject: string;
  readonly text: string | undefined;
  readonly html: string | undefined;
  readonly files: readonly ComposeAttachment[];
}

/** Reads the original's attachments (with their bytes) and, for an outbound one, the bytes it was sent as. */
export async function readOriginal(store: TenantStore, message: MessageRow): Promise<ForwardOriginal> {
  const attachments = await store.find(Attachment, { messageId: message.id }, { orderBy: { position: "asc" }, populate: ["content"] });
  const submission =
    message.direction === "outbound" && message.submissionId ? await store.findOne(Submission, { id: message.submissionId }, { populate: ["mime"] }) : null;
  return { message, attachments, sent: submission ? Buffer.from(submission.mime) : null };
}

/** One "Fwd: " in front of the original's subject. */
export function forwardSubject(subject: string): string {
  return prefixedSubject("Fwd: ", /^(fwd?|fw):/i, subject);
}

/**
 * The forward's content: the text and HTML given above the original (inline: quoted under a header block, with its
 * clean attachments; attachment: the original as message/rfc822, 422 attachment_not_clean unless every attachment of
 * it is clean).
 */
export async function forwardContent(original: ForwardOriginal, mode: ForwardMode, given: { text?: string | undefined; html?: string | undefined }): Promise<ForwardContent> {
  const { message } = original;
  const subject = forwardSubject(message.subject);
  if (mode === "attachment") {
    const unclean = original.attachments.filter((a) => a.scanState !== "clean");
    if (unclean.length > 0) {
      throw new Unprocessable(
        "attachment_not_clean",
        `the message has attachments that are not clean (${unclean.map((a) => `${a.filename}: ${a.scanState}`).join(", ")}); forward it inline (its clean attachments travel) or retry once its scan is done`,
      );
    }
    const raw = original.sent ?? (await rebuilt(original));
    const file = { filename: `${fileStem(message.subject)}.eml`, contentType: "message/rfc822", content: raw };
    // Without a note of its own the forward is the attached message alone, under an empty text part.
    return { subject, text: given.text ?? (given.html === undefined ? "" : undefined), html: given.html, files: [file] };
  }
  const header = headerBlock(message);
  const text = `${given.text ?? ""}\n\n---------- Forwarded message ---------\n${header.map(([k, v]) => `${k}: ${v}`).join("\n")}\n\n${message.text}`;
  const html =
    given.html === undefined && message.html === null
      ? undefined
      : `${given.html ?? paragraphs(given.text ?? "")}<br><br><div>---------- Forwarded message ---------<br>${header
          .map(([k, v]) => `${k}: ${escapeHtml(v)}`)
          .join("<br>")}</div><br>${message.html ?? `<pre>${escapeHtml(message.text)}</pre>`}`;
  const files = original.attachments
    .filter((a) => a.scanState === "clean")
    .map(({ filename, contentType, content }) => ({ filename, contentType: safeType(contentType), content }));
  return { subject, text, html, files };
}

/** The original's header block: From, Date, Subject, To (and Cc). */
function headerBlock(m: MessageRow): [string, string][] {
  const block: [string, string][] = [
    ["From", show(m.from)],
    ["Date", m.createdAt.toUTCString()],
    ["Subject", oneLine(m.subject)],
    ["To", m.to.map(show).join(", ")],
  ];
  if ((m.cc ?? []).length > 0) block.push(["Cc", m.cc.map(show).join(", ")]);
  return block;
}

function show(a: StoredAddress): string {
  return a.name ? `${oneLine(a.name)} <${oneLine(a.email)}>` : oneLine(a.email);
}

/** Control characters (line breaks among them) of stored, untrusted text become spaces. */
function oneLine(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function paragraphs(text: string): string {
  return escapeHtml(text).replace(/\r?\n/g, "<br>");
}

/** A filename stem from a subject: what file systems take, at most 100 characters. */
function fileStem(subject: string): string {
  const stem = oneLine(subject).replace(/[\\/:*?"<>|]+/g, "_").slice(0, 100).trim();
  return stem === "" ? "message" : stem;
}

/** An address a header may carry: the stored one when it is one plain address without control characters. */
function headerAddress(a: StoredAddress): { email: string; name?: string; domain: string } | undefined {
  const email = a.email.trim();
  if (!/^[^\s@<>(),;:"\\]+@[^\s@<>(),;:"\\]+$/.test(email)) return undefined;
  return { email, domain: email.slice(email.lastIndexOf("@") + 1), ...(a.name ? { name: oneLine(a.name) } : {}) };
}

/** An inbound original rebuilt from what was stored: its addresses, date, subject, ids, bodies and attachments. */
function rebuilt(original: ForwardOriginal): Promise<Buffer> {
  const m = original.message;
  const from = headerAddress(m.from) ?? { email: "unknown@invalid", domain: "invalid" };
  const list = (as: readonly StoredAddress[]) => as.flatMap((a) => headerAddress(a) ?? []);
  const replyTo = m.replyTo ? headerAddress(m.replyTo) : undefined;
  const idOk = (id: string) => /^<[^<>\s]+>$/.test(id);
  return composeMime({
    messageId: idOk(m.internetMessageId) ? m.internetMessageId : `<${m.id}@invalid>`,
    from,
    to: list(m.to),
    cc: list(m.cc ?? []),
    replyTo,
    subject: oneLine(m.subject),
    text: m.text,
    html: m.html ?? undefined,
    inReplyTo: m.inReplyTo && idOk(m.inReplyTo) ? m.inReplyTo : undefined,
    references: m.references.filter(idOk),
    attachments: original.attachments.map(({ filename, contentType, content }) => ({ filename, contentType: safeType(contentType), content })),
    date: m.createdAt,
  });
}

/** An inbound attachment's declared type (untrusted) when it is one the composer may write; else application/octet-stream. */
function safeType(contentType: string): string {
  try {
    return mediaTypeOf(contentType);
  } catch {
    return "application/octet-stream";
  }
}
