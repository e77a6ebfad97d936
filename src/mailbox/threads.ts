// Reading conversations: thread summaries of an inbox, and one thread with a page of its messages.
import { raw } from "@mikro-orm/core";
import type { Principal } from "../auth/principal.js";
import { canAccessInbox } from "../auth/principal.js";
import { Thread } from "../db/entities/index.js";
import type { ThreadRow } from "../db/entities/thread.js";
import type { TenantStore } from "../db/tenant-store.js";
import { Gone, NotFound } from "../errors.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { Page } from "../pagination/keyset.js";
import { DEFAULT_PAGE_SIZE, type CursorCodec, type KeysetPosition } from "../pagination/cursor.js";
import { readMessagePage, type MessageFilter, type MessagePage } from "./message-pages.js";

export interface ThreadsDeps {
  readonly inboxes: Inboxes;
  readonly cursors: CursorCodec;
  readonly maxPageBytes: number;
}

export type Threads = ReturnType<typeof createThreads>;

export function createThreads(deps: ThreadsDeps) {
  const { inboxes, cursors } = deps;

  return {
    /**
     * Summaries, most recent activity first: without threads of blocked mail unless asked, and with senderAuthenticated
     * only threads with an inbound message whose sender authenticated.
     */
    async list(
      store: TenantStore,
      principal: Principal,
      inboxId: string,
      page: { limit?: number; cursor?: string } & MessageFilter,
    ): Promise<Page<ThreadRow>> {
      await inboxes.findReadable(store, principal, inboxId, page.cursor !== undefined);
      const scope = { organizationId: store.organizationId, resource: `threads:${inboxId}` };
      const position = page.cursor === undefined ? undefined : cursors.decode(scope, page.cursor);
      const limit = page.limit ?? DEFAULT_PAGE_SIZE;
      const rows = await store.find(
        Thread,
        {
          inboxId,
          ...afterActivity(position),
          ...(page.includeBlocked ? {} : { blocked: false }),
          ...(page.senderAuthenticated ? { [hasAuthenticatedMessage()]: [] } : {}),
        },
        { orderBy: [{ lastMessageAt: "desc" }, { id: "desc" }], limit: limit + 1, disableIdentityMap: true },
      );
      const items = rows.slice(0, limit);
      const last = items[items.length - 1];
      return {
        items,
        nextCursor: rows.length > limit && last ? cursors.encode(scope, { createdAt: last.lastMessageAt, id: last.id }) : undefined,
      };
    },

    /** A thread with one page of its messages, newest first. */
    async get(
      store: TenantStore,
      principal: Principal,
      threadId: string,
      page: { limit?: number; cursor?: string; senderAuthenticated?: boolean | undefined },
    ): Promise<{ thread: ThreadRow; messages: MessagePage }> {
      const scope = { organizationId: store.organizationId, resource: `thread:${threadId}` };
      const thread = await store.findOne(Thread, { id: threadId });
      if (!thread || !canAccessInbox(principal, thread.inboxId)) {
        // A valid cursor proves the thread existed for this tenant: it is gone (its messages were deleted).
        if (page.cursor !== undefined && thread === null) {
          cursors.decode(scope, page.cursor);
          throw new Gone("cursor_expired", "the thread this cursor belongs to no longer exists");
        }
        throw new NotFound("thread");
      }
      await inboxes.findReadable(store, principal, thread.inboxId, page.cursor !== undefined);
      // A thread is all blocked mail or none (but for replies to it): a thread named by its id is read whole.
      const messages = await readMessagePage(store, cursors, scope, { threadId }, { ...page, includeBlocked: true }, deps.maxPageBytes);
      return { thread, messages };
    },
  };
}

/**
 * A thread with an inbound message whose sender authenticated (through the partial index of such messages); a new
 * fragment per query, as MikroORM's raw keys are used once.
 */
function hasAuthenticatedMessage(): string {
  return raw((alias: string) => `exists (select 1 from messages m where m.thread_id = ${alias}.id and m.sender_authenticated)`);
}

// Threads are ordered by (lastMessageAt, id); the cursor's createdAt holds the last summary's lastMessageAt.
function afterActivity(position: KeysetPosition | undefined): object {
  if (!position) return {};
  return {
    $or: [
      { lastMessageAt: { $lt: position.createdAt } },
      { lastMessageAt: position.createdAt, id: { $lt: position.id } },
    ],
  };
}
