// Per-key request rate (apiKey.requestsPerMinute), counted in PostgreSQL so every server process shares it.
import type { Interceptor } from "@connectrpc/connect";
import type { Database, SqlTx } from "../db/database.js";
import { RateLimited } from "../errors.js";
import { kPrincipal } from "./context.js";

const MINUTE_MS = 60_000;

export function rateLimit(db: Database, now: () => number = Date.now): Interceptor {
  return (next) => async (req) => {
    const principal = req.contextValues.get(kPrincipal)!;
    const t = now();
    const windowStart = Math.floor(t / MINUTE_MS) * MINUTE_MS;
    // One statement per call on an UNLOGGED table: the atomic upsert is the shared counter.
    const rows = await db.sql.query<{ count: number }>(
        `insert into request_windows (key_id, window_start, count) values ($1, to_timestamp($2), 1)
         on conflict (key_id, window_start) do update set count = request_windows.count + 1
         returning count`,
        [principal.keyId, windowStart / 1000],
      );
    if (rows[0]!.count > principal.requestsPerMinute) {
      throw new RateLimited(
        `rate limit of ${principal.requestsPerMinute} requests per minute exceeded`,
        (windowStart + MINUTE_MS - t) / 1000,
      );
    }
    return next(req);
  };
}

/**
 * Deletes up to `limit` windows that ended before `before` (one bounded statement); returns how many went. A window
 * is read only while it is current, so anything older is dead weight. No index on window_start: the table holds
 * about two windows per active key once pruned, and an index would cost every new window an insert.
 */
export async function pruneRequestWindows(sql: SqlTx, before: Date, limit: number): Promise<number> {
  const [row] = await sql.query<{ n: number }>(
    `with gone as (
       delete from request_windows where ctid = any(array(select ctid from request_windows where window_start < $1 limit $2))
       returning 1)
     select count(*)::int as n from gone`,
    [new Date(before.getTime() - MINUTE_MS), limit],
  );
  return row!.n;
}
