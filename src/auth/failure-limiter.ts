// Failed authentications per peer address and minute, counted in memory: the limit exists to spare the database the
// lookups of keys that do not exist, so it must answer before any query. Each process counts its own peers.
import { peerKey } from "./peer-address.js";

export interface FailureLimiter {
  /** Milliseconds until the peer may fail again, 0 while it is under the limit. */
  retryAfterMs(peerAddress: string | undefined): number;
  record(peerAddress: string | undefined): void;
  /** Takes back a failure recorded in advance that turned out not to be one. */
  refund(peerAddress: string | undefined): void;
}

const WINDOW_MS = 60_000;
/** Peers tracked at once; beyond it the oldest are forgotten, so a flood from many addresses costs bounded memory. */
const MAX_PEERS = 100_000;

export function createFailureLimiter(perMinute: number, now: () => number = Date.now): FailureLimiter {
  // Insertion order is the eviction order: a peer is re-inserted when its window starts.
  const peers = new Map<string, { windowStart: number; count: number }>();
  const windowOf = (t: number) => Math.floor(t / WINDOW_MS) * WINDOW_MS;

  return {
    retryAfterMs(peerAddress) {
      const t = now();
      const entry = peers.get(peerKey(peerAddress));
      if (!entry || entry.windowStart !== windowOf(t) || entry.count < perMinute) return 0;
      return entry.windowStart + WINDOW_MS - t;
    },
    record(peerAddress) {
      const key = peerKey(peerAddress);
      const windowStart = windowOf(now());
      const entry = peers.get(key);
      if (entry && entry.windowStart === windowStart) {
        entry.count++;
        return;
      }
      peers.delete(key);
      if (peers.size >= MAX_PEERS) peers.delete(peers.keys().next().value!);
      peers.set(key, { windowStart, count: 1 });
    },
    refund(peerAddress) {
      const entry = peers.get(peerKey(peerAddress));
      if (entry && entry.windowStart === windowOf(now()) && entry.count > 0) entry.count--;
    },
  };
}
