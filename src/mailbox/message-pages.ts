// One page of stored messages, newest first, with their attachments' metadata, bounded in bytes.
import { Attachment, Message } from "../db/entities/index.js";
import type { AttachmentRow } from "../db/entities/attachment.js";
import type { MessageRow } from "../db/entities/message.js";
import type { TenantStore } from "../db/tenant-store.js";
import { DomainError } from "../errors.js";
import { Code } from "@connectrpc/connect";
import { afterPosition, DEFAULT_PAGE_SIZE, type CursorCodec, type CursorScope } from "../pagination/cursor.js";

export interface MessageWithAttachments {
  readonly message: MessageRow;
  readonly attachments: AttachmentRow[];
}

export interface MessagePage {
  readonly items: MessageWithAttachments[];
  readonly nextCursor: string | undefined;
}

/** A page whose content would exceed the byte bound: the caller retries with a smaller limit (spec: 413). */
export class PageTooLarge extends DomainError {
  constructor(bound: number) {
    super(Code.ResourceExhausted, "page_too_large", `this page would exceed ${bound} bytes of content; retry with a smaller limit`);
  }
}

/**
 * Reads a newest-first page of messages matching `where` (a thread or an inbox). The page's text and HTML together
 * stay under `maxPageBytes`; a single message is always returned, however large, so every message stays readable.
 */
export async function readMessagePage(
  store: TenantStore,
  cursors: CursorCodec,
  scope: CursorScope,
  where: { threadId: string } | { inboxId: string },
  page: { limit?: number; cursor?: string },
  maxPageBytes: number,
): Promise<MessagePage> {
  const position = page.cursor === undefined ? undefined : cursors.decode(scope, page.cursor);
  const limit = page.limit ?? DEFAULT_PAGE_SIZE;
  const rows = await store.find(
    Message,
    { ...where, ...afterPosition(position) },
    { orderBy: [{ createdAt: "desc" }, { id: "desc" }], limit: limit + 1 },
  );
  const messages = rows.slice(0, limit);
  const bytes = messages.reduce((sum, m) => sum + Buffer.byteLength(m.text) + Buffer.byteLength(m.html ?? ""), 0);
  if (messages.length > 1 && bytes > maxPageBytes) throw new PageTooLarge(maxPageBytes);
  const attachments = messages.length === 0 ? [] : await store.find(
    Attachment,
    { messageId: { $in: messages.map((m) => m.id) } },
    { orderBy: { position: "asc" } },
  );
  const last = messages[messages.length - 1];
  return {
    items: messages.map((message) => ({ message, attachments: attachments.filter((a) => a.messageId === message.id) })),
    nextCursor: rows.length > limit && last ? cursors.encode(scope, last) : undefined,
  };
}
