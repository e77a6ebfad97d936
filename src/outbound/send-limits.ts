// The organization's send limits (messagesPerMinute, messagesPerDay, recipientsPerDay), shared by every server
// process: one upsert per window on send_windows counts the message inside the sending transaction, so a refused
// or failed send never counts, and the row lock orders concurrent sends of one organization. Called last in the
// transaction to hold that lock for as short a time as possible.
import type { SqlTx } from "../db/database.js";
import type { TenantSqlTx } from "../db/tenant-store.js";
import { RateLimited } from "../errors.js";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

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
  const [row] = await tx.query<WindowCounts>(
    `with minute as (
       insert into send_windows (organization_id, kind, window_start, messages, recipients)
       values ($1, 'minute', to_timestamp($2), 1, $3)
       on conflict (organization_id, kind, window_start)
       do update set messages = send_windows.messages + 1, recipients = send_windows.recipients + excluded.recipients
       returning messages),
     day as (
       insert into send_windows (organization_id, kind, window_start, messages, recipients)
       values ($1, 'day', to_timestamp($4), 1, $3)
       on conflict (organization_id, kind, window_start)
       do update set messages = send_windows.messages + 1, recipients = send_windows.recipients + excluded.recipients
       returning messages, recipients)
     select o.messages_per_minute, o.messages_per_day, o.recipients_per_day,
            minute.messages as minute_messages, day.messages as day_messages, day.recipients as day_recipients
     from organizations o, minute, day where o.id = $1`,
    [tx.organizationId, minuteStart / 1000, recipients, dayStart / 1000],
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
