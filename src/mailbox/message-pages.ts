// One page of stored messages, newest first, with their attachments' metadata, bounded in bytes.
import { Attachment, Message } from "../db/entities/index.js";
import type { AttachmentRow } from "../db/entities/attachment.js";
import type { MessageRow } from "../db/entities/message.js";
import type { TenantStore } from "../db/tenant-store.js";
import { DomainError } from "../errors.js";
import { Code } from "@connectrpc/connect";
import { DEFAULT_PAGE_SIZE, type CursorCodec, type CursorScope, type KeysetPosition } from "../pagination/cursor.js";

/** What a message shows of each attachment (never its bytes). */
export type AttachmentSummary = Pick<AttachmentRow, "id" | "filename" | "contentType" | "size" | "scanState">;

export interface MessageWithAttachments {
  readonly message: MessageRow;
  readonly attachments: readonly AttachmentSummary[];
}

export interface MessagePage {
  readonly items: MessageWithAttachments[];
  readonly nextCursor: string | undefined;
}

/** Which messages a page lists beyond its thread or inbox. */
export interface MessageFilter {
  /** Only inbound messages whose sender authenticated (DMARC pass). */
  readonly senderAuthenticated?: boolean | undefined;
  /** Mail that sender rules blocked too (left out otherwise). */
  readonly includeBlocked?: boolean | undefined;
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
 * The page is measured before anything large is read: one statement takes the candidates' ids and stored sizes
 * (octet_length reads a TOASTed value's length from its pointer, not the value), then only the bodies of a page
 * that fits are loaded — never the row past the page, never those of a page that is refused.
 */
export async function readMessagePage(
  store: TenantStore,
  cursors: CursorCodec,
  scope: CursorScope,
  where: { threadId: string } | { inboxId: string },
  page: { limit?: number; cursor?: string } & MessageFilter,
  maxPageBytes: number,
): Promise<MessagePage> {
  const position = page.cursor === undefined ? undefined : cursors.decode(scope, page.cursor);
  const limit = page.limit ?? DEFAULT_PAGE_SIZE;
  const candidates = await store.sqlRead<PageCandidate>((organizationId) => candidatesStatement(organizationId, where, page, position, limit + 1));
  const members = candidates.slice(0, limit);
  const bytes = members.reduce((sum, m) => sum + Number(m.content_bytes), 0);
  if (members.length > 1 && bytes > maxPageBytes) throw new PageTooLarge(maxPageBytes);
  if (members.length === 0) return { items: [], nextCursor: undefined };
  const ids = members.map((m) => m.id);
  const [messages, attachments] = await Promise.all([
    store.find(Message, { id: { $in: ids } }, { orderBy: [{ createdAt: "desc" }, { id: "desc" }] }),
    store.find(Attachment, { messageId: { $in: ids } }, { orderBy: { position: "asc" } }),
  ]);
  const last = members[members.length - 1]!;
  return {
    items: messages.map((message) => ({ message, attachments: attachments.filter((a) => a.messageId === message.id) })),
    nextCursor: candidates.length > limit ? cursors.encode(scope, { createdAt: last.created_at, id: last.id }) : undefined,
  };
}

interface PageCandidate {
  readonly id: string;
  readonly created_at: Date;
  /** text and HTML in bytes (UTF-8, the database's encoding); int8 arrives as a string. */
  readonly content_bytes: string;
}

/** Ids, keys and stored sizes of the next `take` messages after `position`, newest first (keyset on created_at, id). */
function candidatesStatement(
  organizationId: string,
  where: { threadId: string } | { inboxId: string },
  filter: MessageFilter,
  position: KeysetPosition | undefined,
  take: number,
): { text: string; values: unknown[] } {
  const [column, value] = "threadId" in where ? ["thread_id", where.threadId] : ["inbox_id", where.inboxId];
  const values: unknown[] = [organizationId, value, take];
  const after = position ? `and (created_at, id) < ($4, $5)` : "";
  if (position) values.push(position.createdAt, position.id);
  const authenticated = filter.senderAuthenticated ? "and sender_authenticated" : "";
  const blocked = filter.includeBlocked ? "" : "and not sender_blocked";
  return {
    text: `select id, created_at, octet_length(text)::int8 + coalesce(octet_length(html), 0) as content_bytes
             from messages where organization_id = $1 and ${column} = $2 ${after} ${authenticated} ${blocked}
            order by created_at desc, id desc limit $3`,
    values,
  };
}
