// Composition of an outbound message into RFC 5322 bytes with nodemailer's MailComposer, file and URL access
// disabled (no content of ours is ever a path or a link to fetch). The bytes are composed once at acceptance and
// stored: every attempt to every recipient sends the same message with the same Message-ID (DKIM-signed then).
// With attachments the message is multipart/mixed; attachments with a Content-ID go beside the HTML body in a
// multipart/related part (inline images); filenames are sanitised and written RFC 2231-encoded (Content-Disposition)
// with an RFC 2047 name= beside it for older clients; a forwarded message is a message/rfc822 part. Bcc recipients
// are never an input here: they are in the envelope only, never in a header.
import MailComposer from "nodemailer/lib/mail-composer";
import { InvalidRequest } from "../errors.js";
import { sanitizeFilename } from "../inbound/attachments.js";
import type { OutboundAddress } from "./addresses.js";
import { mediaTypeOf } from "./media-type.js";

/** A file to attach, its bytes at hand (inline, an upload's, a fetched URL's, a forwarded message). */
export interface ComposeAttachment {
  /** Untrusted: sanitised here. */
  readonly filename: string;
  /** type/subtype; message/rfc822 for a forwarded message. */
  readonly contentType: string;
  readonly content: Uint8Array;
  /** Without angle brackets: the attachment goes in a multipart/related part with the HTML, which shows it as cid:. */
  readonly contentId?: string | undefined;
  /** inline when contentId is set, else attachment, when not given. */
  readonly disposition?: "inline" | "attachment" | undefined;
}

export interface ComposeInput {
  readonly messageId: string;
  readonly from: OutboundAddress;
  readonly to: readonly OutboundAddress[];
  readonly cc?: readonly OutboundAddress[] | undefined;
  readonly replyTo?: OutboundAddress | undefined;
  readonly subject: string;
  readonly text?: string | undefined;
  readonly html?: string | undefined;
  readonly inReplyTo?: string | undefined;
  readonly references?: readonly string[] | undefined;
  readonly attachments?: readonly ComposeAttachment[] | undefined;
  readonly date: Date;
}

const LINE_BREAK = /[\r\n]/;
/** What the contract allows in a Content-ID: never angle brackets, spaces or line breaks. */
const CONTENT_ID = /^[A-Za-z0-9._@+-]{1,200}$/;

function mailbox(a: OutboundAddress): { address: string; name: string } {
  return { address: a.email, name: a.name ?? "" };
}

export async function composeMime(input: ComposeInput): Promise<Buffer> {
  // The API already refuses these; a header value must never carry a line break, whoever calls this.
  for (const [name, value] of [["subject", input.subject], ["inReplyTo", input.inReplyTo ?? ""], ...(input.references ?? []).map((r) => ["references", r])]) {
    if (LINE_BREAK.test(value!)) throw new InvalidRequest(`${name} must not contain line breaks`);
  }
  const cc = input.cc ?? [];
  const attachments = input.attachments ?? [];
  const composer = new MailComposer({
    from: mailbox(input.from),
    to: input.to.map(mailbox),
    ...(cc.length > 0 ? { cc: cc.map(mailbox) } : {}),
    ...(input.replyTo ? { replyTo: mailbox(input.replyTo) } : {}),
    subject: input.subject,
    ...(input.text !== undefined ? { text: input.text } : {}),
    ...(input.html !== undefined ? { html: input.html } : {}),
    ...(attachments.length > 0 ? { attachments: attachments.map(attachmentOf) } : {}),
    messageId: input.messageId,
    ...(input.inReplyTo ? { inReplyTo: input.inReplyTo } : {}),
    ...(input.references && input.references.length > 0 ? { references: [...input.references] } : {}),
    date: input.date,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}

function attachmentOf(a: ComposeAttachment, i: number) {
  const contentType = mediaTypeOf(a.contentType);
  if (a.contentId !== undefined && !CONTENT_ID.test(a.contentId)) throw new InvalidRequest(`attachments[${i}].contentId is not a Content-ID the contract allows`);
  return {
    filename: sanitizeFilename(a.filename, i + 1),
    contentType,
    content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength),
    contentDisposition: a.disposition ?? (a.contentId === undefined ? "attachment" : "inline"),
    ...(a.contentId === undefined ? {} : { cid: a.contentId }),
  };
}
