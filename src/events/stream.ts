// Event streams (StreamEvents): an organization's events read from the event log after a position, as fast as the
// client takes them, then again whenever the log announces more (src/events/hub.ts). A stream holds no events of
// its own beyond one page it is handing over: a slow client is read for at its own pace, the events waiting in the
// log, so no client makes the server buffer. A stream further behind than the log keeps (EVENT_RETENTION) ends with
// event_expired rather than skip what was pruned. A stream outlives the authentication it opened with, so at each
// wake-up and keep-alive it asks how its key stands now: revoked, expired, without the scope, its organization
// suspended or the key no longer allowed the stream's inbox, the stream ends with the error a new one would get; a
// stream of all the key's inboxes follows the key's inbox restriction as it changes.
import { canAccessInbox, type Principal } from "../auth/principal.js";
import type { TenantStore } from "../db/tenant-store.js";
import { Gone, NotFound } from "../errors.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { Holds } from "./holds.js";
import type { EventHub } from "./hub.js";
import {
  eventPositionStatement,
  eventsAfterStatement,
  latestPositionStatement,
  type InboxFilter,
  type LoggedEvent,
} from "./log.js";

export interface EventStreamsDeps {
  readonly inboxes: Inboxes;
  readonly hub: EventHub;
  readonly holds: Holds;
  /** How long the log keeps an event (EVENT_RETENTION). */
  readonly retentionMs: number;
  /** How long a stream stays silent before a keep-alive (STREAM_KEEPALIVE_S). */
  readonly keepAliveMs: number;
}

export interface StreamRequest {
  readonly inboxId?: string | undefined;
  /** Resume after this event. */
  readonly lastEventId?: string | undefined;
  /** Only the events of messages whose sender authenticated. */
  readonly senderAuthenticated?: boolean | undefined;
}

/** Events read from the log at once: what a stream holds at most. */
const PAGE = 100;

export type EventStreams = ReturnType<typeof createEventStreams>;

export function createEventStreams(deps: EventStreamsDeps) {
  const { inboxes, hub, holds } = deps;

  return {
    /**
     * The events, or null for a keep-alive: one as soon as the stream is open (its checks passed), then one after
     * each keepAliveMs without an event. Ends when `signal` aborts or the process shuts down, or with the error of
     * `principalNow` (how the key stands now) or its inbox no longer allowed.
     */
    async *stream(
      store: TenantStore,
      principal: Principal,
      request: StreamRequest,
      signal: AbortSignal,
      principalNow: () => Promise<Principal>,
    ): AsyncGenerator<LoggedEvent | null> {
      if (request.inboxId !== undefined) await inboxes.findActive(store, principal, request.inboxId);
      let filter = filterOf(principal, request);
      const release = holds.acquire(principal.keyId);
      // Watching starts before the position is read, so nothing committed after it goes unannounced.
      const authenticatedOnly = request.senderAuthenticated === true;
      const watch = hub.watch(
        store.organizationId,
        (notice) =>
          (filter === null || (notice.inboxId !== null && filter.includes(notice.inboxId))) &&
          (!authenticatedOnly || notice.senderAuthenticated !== false),
      );
      try {
        let position = await startOf(store, filter, request.lastEventId);
        let lastSent = Date.now();
        yield null;
        let woken = true;
        while (!signal.aborted) {
          if (woken) {
            filter = filterOf(await principalNow(), request);
            if (position.horizon < Date.now() - deps.retentionMs) {
              throw new Gone("event_expired", "this stream fell further behind than the event log keeps events; open a new one");
            }
            const readAt = Date.now();
            // A filtered read skips events: it covers at least the log as it ended before it (an organization's
            // appends commit in position order), so the next read starts there, not at the last event it kept.
            const end = authenticatedOnly ? await logEnd(store) : position.seq;
            const page = await store.sqlRead<LoggedEvent>((organizationId) =>
              eventsAfterStatement(organizationId, filter, position.seq, PAGE, authenticatedOnly),
            );
            for (const event of page) {
              lastSent = Date.now();
              yield event;
            }
            const last = page[page.length - 1];
            if (page.length === PAGE) {
              // More may be behind it, made about when it was or later.
              position = { seq: last!.seq, horizon: last!.created_at.getTime() };
              continue;
            }
            // The end of the log when it was read: what came after was made about then or later.
            position = { seq: furthest(last?.seq ?? position.seq, end), horizon: readAt - CLOCK_SLACK_MS };
          }
          const wake = await watch.next(Math.max(0, lastSent + deps.keepAliveMs - Date.now()), signal);
          if (wake.closed || signal.aborted) return;
          woken = wake.resync || wake.notices.length > 0;
          if (!woken && Date.now() >= lastSent + deps.keepAliveMs) {
            filter = filterOf(await principalNow(), request);
            lastSent = Date.now();
            yield null;
          }
        }
      } finally {
        watch.close();
        release();
      }
    },
  };
}

/** The inboxes a stream shows: the one it names, which the key must still be allowed (404 as at opening), or the key's. */
function filterOf(principal: Principal, request: StreamRequest): InboxFilter {
  if (request.inboxId === undefined) return principal.inboxIds;
  if (!canAccessInbox(principal, request.inboxId)) throw new NotFound("inbox");
  return [request.inboxId];
}

interface Position {
  readonly seq: string;
  /**
   * The events after this position were made at or after this time (epoch ms): once the log prunes before it, the
   * stream may have missed some.
   */
  readonly horizon: number;
}

/** How much earlier than its commit an event's time may be (it is taken when its transaction stores the message). */
const CLOCK_SLACK_MS = 60_000;

/** The organization's latest position. */
async function logEnd(store: TenantStore): Promise<string> {
  const [latest] = await store.sqlRead<{ seq: string }>((organizationId) => latestPositionStatement(organizationId));
  return latest!.seq;
}

/** The later of two positions (int8 as text). */
function furthest(a: string, b: string): string {
  return BigInt(a) >= BigInt(b) ? a : b;
}

/** After the given event, which must still be in the log (410 event_expired otherwise), or after the log's end. */
async function startOf(store: TenantStore, filter: InboxFilter, lastEventId: string | undefined): Promise<Position> {
  if (lastEventId === undefined) return { seq: await logEnd(store), horizon: Date.now() - CLOCK_SLACK_MS };
  const [found] = await store.sqlRead<{ seq: string; created_at: Date }>((organizationId) => eventPositionStatement(organizationId, lastEventId, filter));
  if (!found) {
    throw new Gone("event_expired", "the event log no longer keeps this event (or never had it): resume without it, and catch up by listing threads");
  }
  return { seq: found.seq, horizon: found.created_at.getTime() };
}
