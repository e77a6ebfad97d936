// Per-key request rate (apiKey.requestsPerMinute), counted in PostgreSQL so every server process shares it.
import type { Interceptor } from "@connectrpc/connect";
import type { Database } from "../db/database.js";
import { RateLimited } from "../errors.js";
import { kPrincipal } from "./context.js";

export function rateLimit(db: Database, now: () => number = Date.now): Interceptor {
  return (next) => async (req) => {
    const principal = req.contextValues.get(kPrincipal)!;
    const t = now();
    const windowStart = Math.floor(t / 60_000) * 60_000;
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
        (windowStart + 60_000 - t) / 1000,
      );
    }
    return next(req);
  };
}
