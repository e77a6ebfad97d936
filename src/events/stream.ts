// Event streams (StreamEvents): an organization's events read from the event log after a position, as fast as the
// client takes them, then again whenever the log announces more (src/events/hub.ts). A stream holds no events of
// its own beyond one page it is handing over: a slow client is read for at its own pace, the events waiting in the
// log, so no client makes the server buffer. A stream further behind than the log keeps (EVENT_RETENTION) ends with
// event_expired rather than skip what was pruned.
import type { Principal } from "../auth/principal.js";
import type { TenantStore } from "../db/tenant-store.js";
import { Gone } from "../errors.js";
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
}

/** Events read from the log at once: what a stream holds at most. */
const PAGE = 100;

export type EventStreams = ReturnType<typeof createEventStreams>;

export function createEventStreams(deps: EventStreamsDeps) {
  const { inboxes, hub, holds } = deps;

  return {
    /**
     * The events, or null for a keep-alive: one as soon as the stream is open (its checks passed), then one after
     * each keepAliveMs without an event. Ends when `signal` aborts or the process shuts down.
     */
    async *stream(store: TenantStore, principal: Principal, request: StreamRequest, signal: AbortSignal): AsyncGenerator<LoggedEvent | null> {
      if (request.inboxId !== undefined) await inboxes.findActive(store, principal, request.inboxId);
      const filter: InboxFilter = request.inboxId !== undefined ? [request.inboxId] : principal.inboxIds;
      const release = holds.acquire(principal.keyId);
      // Watching starts before the position is read, so nothing committed after it goes unannounced.
      const watch = hub.watch(store.organizationId, (notice) => filter === null || (notice.inboxId !== null && filter.includes(notice.inboxId)));
      try {
        let position = await startOf(store, filter, request.lastEventId);
        let lastSent = Date.now();
        yield null;
        let woken = true;
        while (!signal.aborted) {
          if (woken) {
            if (position.horizon < Date.now() - deps.retentionMs) {
              throw new Gone("event_expired", "this stream fell further behind than the event log keeps events; open a new one");
            }
            const readAt = Date.now();
            const page = await store.sqlRead<LoggedEvent>((organizationId) => eventsAfterStatement(organizationId, filter, position.seq, PAGE));
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
            position = { seq: last?.seq ?? position.seq, horizon: readAt - CLOCK_SLACK_MS };
          }
          const wake = await watch.next(Math.max(0, lastSent + deps.keepAliveMs - Date.now()), signal);
          if (wake.closed || signal.aborted) return;
          woken = wake.resync || wake.notices.length > 0;
          if (!woken && Date.now() >= lastSent + deps.keepAliveMs) {
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

/** After the given event, which must still be in the log (410 event_expired otherwise), or after the log's end. */
async function startOf(store: TenantStore, filter: InboxFilter, lastEventId: string | undefined): Promise<Position> {
  if (lastEventId === undefined) {
    const [latest] = await store.sqlRead<{ seq: string }>((organizationId) => latestPositionStatement(organizationId));
    return { seq: latest!.seq, horizon: Date.now() - CLOCK_SLACK_MS };
  }
  const [found] = await store.sqlRead<{ seq: string; created_at: Date }>((organizationId) => eventPositionStatement(organizationId, lastEventId, filter));
  if (!found) {
    throw new Gone("event_expired", "the event log no longer keeps this event (or never had it): resume without it, and catch up by listing threads");
  }
  return { seq: found.seq, horizon: found.created_at.getTime() };
}
