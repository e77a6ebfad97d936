// The organization's send limits (messagesPerMinute, messagesPerDay, recipientsPerDay), shared by every server
// process and counted inside the sending transaction, so a refused or failed send never counts. A window is counted
// in SEND_WINDOW_SHARDS rows: a send adds itself to the shard of its database connection (whose row lock it holds
// until its commit) and then reads the window's sum. One row per window made every send of an organization wait for
// the commit of the one before it (bench:outbound: 16 clients of one organization capped near 110 sends/s).
//
// The limits are exact for sends one after another. Concurrent sends may pass a limit by at most
// SEND_WINDOW_SHARDS - 1: the send that read last saw every admitted send except those still uncommitted, and
// those hold the other shards' locks, at most one each (the sum is read in a statement after the increment, so
// after its lock was granted).
import type { SqlTx } from "../db/database.js";
import type { TenantSqlTx } from "../db/tenant-store.js";
import { RateLimited } from "../errors.js";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Rows per organization and window; also the most concurrent sends can pass a limit by, plus one. */
export const SEND_WINDOW_SHARDS = 8;

interface WindowCounts {
  messages_per_minute: number;
  messages_per_day: number;
  recipients_per_day: number;
  minute_messages: number;
  day_messages: number;
  day_recipients: number;
}

export async function countSend(tx: TenantSqlTx, recipients: number, at: Date): Promise<void> {
  const t = at.getTime();
  const minuteStart = Math.floor(t / MINUTE_MS) * MINUTE_MS;
  const dayStart = Math.floor(t / DAY_MS) * DAY_MS;
  const windows = [tx.organizationId, minuteStart / 1000, dayStart / 1000] as const;
  // Minute before day, in every transaction: two sends on one shard lock them in the same order.
  await tx.query(
    `insert into send_windows (organization_id, kind, window_start, shard, messages, recipients)
     values ($1, 'minute', to_timestamp($2), pg_backend_pid() % $4, 1, $5), ($1, 'day', to_timestamp($3), pg_backend_pid() % $4, 1, $5)
     on conflict (organization_id, kind, window_start, shard)
     do update set messages = send_windows.messages + 1, recipients = send_windows.recipients + excluded.recipients`,
    [...windows, SEND_WINDOW_SHARDS, recipients],
  );
  const [row] = await tx.query<WindowCounts>(
    `select o.messages_per_minute, o.messages_per_day, o.recipients_per_day,
            (select coalesce(sum(messages), 0)::int from send_windows
              where organization_id = $1 and kind = 'minute' and window_start = to_timestamp($2)) as minute_messages,
            d.messages as day_messages, d.recipients as day_recipients
       from organizations o,
            (select coalesce(sum(messages), 0)::int as messages, coalesce(sum(recipients), 0)::int as recipients from send_windows
              where organization_id = $1 and kind = 'day' and window_start = to_timestamp($3)) d
      where o.id = $1`,
    windows,
  );
  if (!row) throw new Error("organization not found while counting a send");
  if (row.minute_messages > row.messages_per_minute) {
    throw new RateLimited(`the organization's limit of ${row.messages_per_minute} messages per minute is reached`, (minuteStart + MINUTE_MS - t) / 1000, "send_limit_exceeded");
  }
  if (row.day_messages > row.messages_per_day) {
    throw new RateLimited(`the organization's limit of ${row.messages_per_day} messages per day is reached`, (dayStart + DAY_MS - t) / 1000, "send_limit_exceeded");
  }
  if (row.day_recipients > row.recipients_per_day) {
    throw new RateLimited(
      `the organization's limit of ${row.recipients_per_day} recipients per day would be exceeded by ${recipients} more`,
      (dayStart + DAY_MS - t) / 1000,
      "send_limit_exceeded",
    );
  }
}

/**
 * Deletes up to `limit` windows (of every organization) that ended before `before`: minute windows over a minute
 * old, day windows over a day old. One bounded statement; returns how many went. Only the current windows are read.
 */
export async function pruneSendWindows(sql: SqlTx, before: Date, limit: number): Promise<number> {
  const [row] = await sql.query<{ n: number }>(
    `with gone as (
       delete from send_windows where ctid = any(array(
         select ctid from send_windows
          where (kind = 'minute' and window_start < $1) or (kind = 'day' and window_start < $2)
          limit $3))
       returning 1)
     select count(*)::int as n from gone`,
    [new Date(before.getTime() - MINUTE_MS), new Date(before.getTime() - DAY_MS), limit],
  );
  return row!.n;
}
