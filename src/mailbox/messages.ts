// Messages: export an inbox page by page, delete a message, download a clean attachment.
import type { Principal } from "../auth/principal.js";
import { canAccessInbox } from "../auth/principal.js";
import { Attachment, Message, Thread } from "../db/entities/index.js";
import type { InboxRow } from "../db/entities/inbox.js";
import type { MessageRow } from "../db/entities/message.js";
import { participantsWith } from "../db/tables/threads.js";
import type { TenantStore } from "../db/tenant-store.js";
import { Conflict, NotFound, PermissionDenied } from "../errors.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { CursorCodec } from "../pagination/cursor.js";
import { readMessagePage, type MessageFilter, type MessagePage } from "./message-pages.js";

export interface MessagesDeps {
  readonly inboxes: Inboxes;
  readonly cursors: CursorCodec;
  readonly maxPageBytes: number;
}

export interface AttachmentDownload {
  readonly filename: string;
  readonly content: Uint8Array;
}

export type Messages = ReturnType<typeof createMessages>;

export function createMessages(deps: MessagesDeps) {
  const { inboxes, cursors } = deps;

  async function findReadable(store: TenantStore, principal: Principal, messageId: string): Promise<MessageRow> {
    const message = await store.findOne(Message, { id: messageId });
    if (!message || !canAccessInbox(principal, message.inboxId)) throw new NotFound("message");
    await inboxes.findReadable(store, principal, message.inboxId, false);
    return message;
  }

  return {
    async exportPage(
      store: TenantStore,
      principal: Principal,
      inboxId: string,
      page: { limit?: number; cursor?: string } & MessageFilter,
    ): Promise<{ inbox: InboxRow; messages: MessagePage }> {
      const inbox = await inboxes.findReadable(store, principal, inboxId, page.cursor !== undefined);
      const scope = { organizationId: store.organizationId, resource: `export:${inboxId}` };
      return { inbox, messages: await readMessagePage(store, cursors, scope, { inboxId }, page, deps.maxPageBytes) };
    },

    /** Deletes a message and its attachments, and keeps its thread's summary true (or removes an empty thread). */
    async delete(store: TenantStore, principal: Principal, messageId: string): Promise<void> {
      const message = await findReadable(store, principal, messageId);
      await store.transactional(async (tx) => {
        await tx.nativeDelete(Attachment, { messageId });
        await tx.nativeDelete(Message, { id: messageId });
        await refreshThreadSummary(tx, message.threadId);
      });
    },

    async downloadAttachment(store: TenantStore, principal: Principal, messageId: string, attachmentId: string): Promise<AttachmentDownload> {
      await findReadable(store, principal, messageId);
      const attachment = await store.findOne(Attachment, { id: attachmentId, messageId }, { populate: ["content"] });
      if (!attachment) throw new NotFound("attachment");
      switch (attachment.scanState) {
        case "clean":
          return { filename: attachment.filename, content: attachment.content };
        case "unscanned":
          throw new Conflict("attachment_scan_pending", "the attachment has not been scanned yet; retry shortly");
        default:
          throw new PermissionDenied(
            `the attachment cannot be downloaded: its scan state is ${attachment.scanState}`,
            "attachment_blocked",
          );
      }
    },
  };
}

/** Recomputes a thread's count, last activity and participants from its remaining messages. */
async function refreshThreadSummary(store: TenantStore, threadId: string): Promise<void> {
  // Only what the summary needs: bodies can be large.
  const remaining = await store.find(Message, { threadId }, { orderBy: { createdAt: "asc" }, fields: ["createdAt", "from", "to"] as never });
  if (remaining.length === 0) {
    await store.nativeDelete(Thread, { id: threadId });
    return;
  }
  const thread = await store.findOne(Thread, { id: threadId });
  if (!thread) return;
  // By the threads table's rule, from what the messages keep: they keep no Cc, so a Cc'd address of an inbound
  // message stays a participant only while another kept address names it.
  const participants = remaining.reduce<string[]>((p, m) => participantsWith(p, { from: m.from, to: m.to, cc: [] }), []);
  thread.messageCount = remaining.length;
  thread.lastMessageAt = remaining[remaining.length - 1]!.createdAt;
  thread.participants = participants;
  thread.updatedAt = new Date();
  await store.flush();
}
