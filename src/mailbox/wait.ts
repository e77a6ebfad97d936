// Waiting for an inbound message (WaitForMessage): the oldest matching message of an inbox, read at once and again
// whenever the event log announces a message of that inbox (src/events/hub.ts), until one matches or the time is up.
// A wait holds no database connection while it waits, only a hold of its key's (a bounded number per key).
import type { Principal } from "../auth/principal.js";
import { Attachment, Message } from "../db/entities/index.js";
import type { TenantStore } from "../db/tenant-store.js";
import type { Holds } from "../events/holds.js";
import type { EventHub } from "../events/hub.js";
import { NotFound, Unavailable } from "../errors.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { MessageWithAttachments } from "./message-pages.js";

export interface MessageWaitsDeps {
  readonly inboxes: Inboxes;
  readonly hub: EventHub;
  readonly holds: Holds;
}

export interface WaitRequest {
  readonly inboxId: string;
  /** 1 to 25 (the contract's bounds). */
  readonly timeoutSeconds?: number | undefined;
  /** An address, or a domain (with its subdomains). */
  readonly from?: string | undefined;
  readonly subjectContains?: string | undefined;
  /** A message id of the inbox: only messages stored after it. */
  readonly after?: string | undefined;
  /** Only messages whose sender authenticated (DMARC pass). */
  readonly senderAuthenticated?: boolean | undefined;
}

/** The wait when the request names none: the contract's longest. */
const DEFAULT_TIMEOUT_S = 25;

export type MessageWaits = ReturnType<typeof createMessageWaits>;

export function createMessageWaits(deps: MessageWaitsDeps) {
  const { inboxes, hub, holds } = deps;

  return {
    /** The oldest inbound message that matches, or null when none was stored before the time ran out. */
    async wait(store: TenantStore, principal: Principal, request: WaitRequest, signal: AbortSignal): Promise<MessageWithAttachments | null> {
      const deadline = Date.now() + (request.timeoutSeconds ?? DEFAULT_TIMEOUT_S) * 1000;
      await inboxes.findActive(store, principal, request.inboxId);
      const after = request.after === undefined ? null : await positionOf(store, request.inboxId, request.after);
      const release = holds.acquire(principal.keyId);
      // Watching starts before the first read, so a message stored while it runs is announced to this wait.
      const authenticatedOnly = request.senderAuthenticated === true;
      const watch = hub.watch(
        store.organizationId,
        (notice) => notice.inboxId === request.inboxId && (!authenticatedOnly || notice.senderAuthenticated !== false),
      );
      try {
        let candidates: readonly string[] | null = null;
        for (;;) {
          const id = await firstMatch(store, request, after, candidates);
          if (id !== undefined) {
            const found = await withAttachments(store, id);
            if (found) return found;
            // Deleted since it matched: another stored message may match.
            candidates = null;
            continue;
          }
          const left = deadline - Date.now();
          if (left <= 0 || signal.aborted) return null;
          const wake = await watch.next(left, signal);
          if (wake.closed) throw new Unavailable("unavailable", "the server is shutting down; wait again", 1);
          // A notice names its message: only those are read, unless notices may have been missed.
          candidates = wake.resync ? null : wake.notices.flatMap((n) => (n.messageId === null ? [] : [n.messageId]));
        }
      } finally {
        watch.close();
        release();
      }
    },
  };
}

interface Position {
  readonly created_at: Date;
  readonly id: string;
}

/** Where `after` stands in the inbox's order of messages (created_at, id); 404 when the inbox has no such message. */
async function positionOf(store: TenantStore, inboxId: string, messageId: string): Promise<Position> {
  const [position] = await store.sqlRead<Position>((organizationId) => ({
    text: `select created_at, id from messages where organization_id = $1 and inbox_id = $2 and id = $3`,
    values: [organizationId, inboxId, messageId],
  }));
  if (!position) throw new NotFound("message");
  return position;
}

/**
 * The id of the oldest inbound message of the inbox that matches the request, among `candidates` when given (an
 * empty list matches nothing), after `after` when given. Mail that sender rules blocked never matches.
 */
async function firstMatch(
  store: TenantStore,
  request: WaitRequest,
  after: Position | null,
  candidates: readonly string[] | null,
): Promise<string | undefined> {
  if (candidates?.length === 0) return undefined;
  const [row] = await store.sqlRead<{ id: string }>((organizationId) => {
    const values: unknown[] = [organizationId, request.inboxId];
    const bind = (value: unknown) => `$${values.push(value)}`;
    const conditions = [`organization_id = $1`, `inbox_id = $2`, `direction = 'inbound'`, `not sender_blocked`];
    if (request.senderAuthenticated) conditions.push(`sender_authenticated`);
    if (candidates) conditions.push(`id = any(${bind([...candidates])})`);
    if (after) conditions.push(`(created_at, id) > (${bind(after.created_at)}, ${bind(after.id)})`);
    if (request.from !== undefined) conditions.push(fromCondition(request.from.toLowerCase(), bind));
    if (request.subjectContains !== undefined) conditions.push(`strpos(lower(subject), ${bind(request.subjectContains.toLowerCase())}) > 0`);
    return { text: `select id from messages where ${conditions.join(" and ")} order by created_at, id limit 1`, values };
  });
  return row?.id;
}

/** An address matches itself (any letter case); a domain matches addresses at it and at its subdomains. */
function fromCondition(from: string, bind: (value: unknown) => string): string {
  const email = `lower("from"->>'email')`;
  if (from.includes("@")) return `${email} = ${bind(from)}`;
  const domain = bind(from);
  return `(right(${email}, length(${domain}) + 1) = '@' || ${domain} or right(${email}, length(${domain}) + 1) = '.' || ${domain})`;
}

/** The message with its attachments' metadata; null when it was deleted since it matched. */
async function withAttachments(store: TenantStore, id: string): Promise<MessageWithAttachments | null> {
  const message = await store.findOne(Message, { id });
  if (!message) return null;
  return { message, attachments: await store.find(Attachment, { messageId: id }, { orderBy: { position: "asc" } }) };
}
