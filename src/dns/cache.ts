// A caching resolver: answers (positive and negative) are kept for their TTL, temporary failures (a timeout,
// SERVFAIL) briefly as RFC 9520 asks, so a resolver that drops questions costs each name its timeout once, not on
// every lookup; and concurrent lookups of the same name and type share one query, so a bulk call resolves each
// domain once.
import type { QueryType } from "./wire.js";
import type { DnsLookup, DnsResolver } from "./resolver.js";

export interface CacheOptions {
  /** Entries kept at most; the least recently used goes first. */
  readonly maxEntries?: number;
  /** A ceiling on any TTL, so a record set with a week-long TTL is still re-read within the hour. */
  readonly maxTtlSeconds?: number;
  /** How long a temporary failure is kept; the inner resolver's failureCacheSeconds when unset, else none. */
  readonly failureTtlSeconds?: number;
  readonly now?: () => number;
}

interface Entry {
  readonly lookup: DnsLookup;
  readonly expiresAt: number;
}

export function createCachingResolver(inner: DnsResolver, options: CacheOptions = {}): DnsResolver {
  const maxEntries = options.maxEntries ?? 10_000;
  const maxTtlSeconds = options.maxTtlSeconds ?? 3600;
  const failureTtlSeconds = options.failureTtlSeconds ?? inner.failureCacheSeconds ?? 0;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<DnsLookup>>();

  async function resolve(key: string, name: string, type: QueryType): Promise<DnsLookup> {
    const lookup = await inner.lookup(name, type);
    const ttl = lookup.kind === "temporary" ? failureTtlSeconds : Math.min(lookup.ttl, maxTtlSeconds);
    if (ttl > 0) {
      entries.set(key, { lookup, expiresAt: now() + ttl * 1000 });
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
    }
    return lookup;
  }

  return {
    lookup<T extends QueryType>(name: string, type: T): Promise<DnsLookup<T>> {
      const key = `${type} ${name.toLowerCase()}`;
      const cached = entries.get(key);
      if (cached && cached.expiresAt > now()) {
        // Re-inserting keeps the Map in least-recently-used order.
        entries.delete(key);
        entries.set(key, cached);
        return Promise.resolve(cached.lookup as DnsLookup<T>);
      }
      if (cached) entries.delete(key);
      let pending = inFlight.get(key);
      if (!pending) {
        pending = resolve(key, name, type).finally(() => inFlight.delete(key));
        inFlight.set(key, pending);
      }
      return pending as Promise<DnsLookup<T>>;
    },
  };
}
