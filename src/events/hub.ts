// One LISTEN per API process on the event log's channel, fanned out to the waits and streams of that process by
// organization. A notification only wakes: what a waiter then answers it reads from the database, so notifications
// lost while the listening connection was down cost nothing once every watcher reads again, which it is told to do
// when listening resumes.
import type { SqlPool } from "../db/database.js";
import type { Logger } from "../logger.js";
import { EVENTS_CHANNEL, noticeOf, type EventNotice } from "./log.js";

/** What a watcher learns at a wake-up. */
export interface Wake {
  /** Notices of accepted events since the previous wake-up, oldest first. */
  readonly notices: readonly EventNotice[];
  /** Notices may have been missed (listening resumed, or more came than are kept): read everything again. */
  readonly resync: boolean;
  /** The hub closed (the process is shutting down). */
  readonly closed: boolean;
}

export interface Watch {
  /**
   * Resolves with what happened since the previous call: at once when something did, else at the next notice, after
   * `ms` (an empty wake) or when `signal` aborts (an empty wake too; the caller checks its signal).
   */
  next(ms: number, signal: AbortSignal): Promise<Wake>;
  close(): void;
}

export interface EventHub {
  /** Watches the organization's events that `accept` lets through, from now on. */
  watch(organizationId: string, accept: (notice: EventNotice) => boolean): Watch;
  /** Wakes every watch with `closed`, and stops listening. */
  close(): Promise<void>;
}

/** Notices a watch keeps between wake-ups; more make it read everything again instead. */
const MAX_NOTICES = 64;

interface Watcher {
  notices: EventNotice[];
  resync: boolean;
  wake: (() => void) | undefined;
}

export function createEventHub(sql: SqlPool, log: Logger): EventHub {
  const byOrganization = new Map<string, Map<Watcher, (notice: EventNotice) => boolean>>();
  let closed = false;
  const all = () => [...byOrganization.values()].flatMap((watchers) => [...watchers.keys()]);
  const listener = sql.listen(EVENTS_CHANNEL, {
    notified(payload) {
      const notice = noticeOf(payload);
      if (!notice) return;
      for (const [watcher, accept] of byOrganization.get(notice.organizationId) ?? []) {
        if (!accept(notice)) continue;
        if (watcher.notices.length < MAX_NOTICES) watcher.notices.push(notice);
        else watcher.resync = true;
        watcher.wake?.();
      }
    },
    listening() {
      for (const watcher of all()) {
        watcher.resync = true;
        watcher.wake?.();
      }
    },
    lost: () => log.warn("the event notification connection was lost; listening again"),
  });

  return {
    watch(organizationId, accept) {
      const watcher: Watcher = { notices: [], resync: false, wake: undefined };
      let watchers = byOrganization.get(organizationId);
      if (!watchers) byOrganization.set(organizationId, (watchers = new Map()));
      watchers.set(watcher, accept);
      const take = (): Wake => {
        const wake = { notices: watcher.notices, resync: watcher.resync, closed };
        watcher.notices = [];
        watcher.resync = false;
        return wake;
      };
      return {
        async next(ms, signal) {
          if (closed || watcher.resync || watcher.notices.length > 0 || signal.aborted) return take();
          await new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              signal.removeEventListener("abort", done);
              watcher.wake = undefined;
              resolve();
            };
            const timer = setTimeout(done, ms);
            signal.addEventListener("abort", done, { once: true });
            watcher.wake = done;
          });
          return take();
        },
        close() {
          watcher.wake?.();
          watchers.delete(watcher);
          if (watchers.size === 0 && byOrganization.get(organizationId) === watchers) byOrganization.delete(organizationId);
        },
      };
    },

    async close() {
      closed = true;
      for (const watcher of all()) watcher.wake?.();
      await listener.close();
    },
  };
}
