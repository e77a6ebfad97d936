// Composition of an outbound message into RFC 5322 bytes with nodemailer's MailComposer, file and URL access
// disabled (no content of ours is ever a path or a link to fetch). The bytes are composed once at acceptance and
// stored: every attempt to every recipient sends the same message with the same Message-ID.
import MailComposer from "nodemailer/lib/mail-composer";
import { InvalidRequest } from "../errors.js";
import type { OutboundAddress } from "./addresses.js";

export interface ComposeInput {
  readonly messageId: string;
  readonly from: OutboundAddress;
  readonly to: readonly OutboundAddress[];
  readonly replyTo?: OutboundAddress | undefined;
  readonly subject: string;
  readonly text?: string | undefined;
  readonly html?: string | undefined;
  readonly inReplyTo?: string | undefined;
  readonly references?: readonly string[] | undefined;
  readonly date: Date;
}

const LINE_BREAK = /[\r\n]/;

function mailbox(a: OutboundAddress): { address: string; name: string } {
  return { address: a.email, name: a.name ?? "" };
}

export async function composeMime(input: ComposeInput): Promise<Buffer> {
  // The API already refuses these; a header value must never carry a line break, whoever calls this.
  for (const [name, value] of [["subject", input.subject], ["inReplyTo", input.inReplyTo ?? ""], ...(input.references ?? []).map((r) => ["references", r])]) {
    if (LINE_BREAK.test(value!)) throw new InvalidRequest(`${name} must not contain line breaks`);
  }
  const composer = new MailComposer({
    from: mailbox(input.from),
    to: input.to.map(mailbox),
    ...(input.replyTo ? { replyTo: mailbox(input.replyTo) } : {}),
    subject: input.subject,
    ...(input.text !== undefined ? { text: input.text } : {}),
    ...(input.html !== undefined ? { html: input.html } : {}),
    messageId: input.messageId,
    ...(input.inReplyTo ? { inReplyTo: input.inReplyTo } : {}),
    ...(input.references && input.references.length > 0 ? { references: [...input.references] } : {}),
    date: input.date,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}
