// The rate limiter and the send limits add a counter row per key or organization and window; the worker's pruning
// job deletes the windows that ended, in bounded batches, and keeps the current ones.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { openDatabase, type Database } from "../../src/db/database.js";
import { MAX_PRUNE_BATCHES, pruneCounterWindows } from "../../src/jobs/counter-windows.js";

let db: Database;
beforeAll(async () => {
  db = await openDatabase(inject("databaseUrl"), { poolMax: 2 });
});
afterAll(() => db?.close());

const MINUTE = 60_000;
const DAY = 86_400_000;

test("prunes request and send windows that ended, in bounded batches, and keeps the current and just-ended ones", async () => {
  const now = Date.now();
  const minute = Math.floor(now / MINUTE) * MINUTE;
  const day = Math.floor(now / DAY) * DAY;
  const key = randomUUID();
  const org = randomUUID();
  // Ten ended minutes each (more than the batches of three below), the current minute and the one just ended.
  const endedMinutes = Array.from({ length: 10 }, (_, i) => minute - (i + 3) * MINUTE);
  const keptMinutes = [minute, minute - MINUTE];
  await db.sql.query(
    `insert into request_windows (key_id, window_start, count) select $1, to_timestamp(s / 1000.0), 1 from unnest($2::int8[]) as s`,
    [key, [...endedMinutes, ...keptMinutes]],
  );
  const endedDays = [day - 2 * DAY, day - 3 * DAY, day - 40 * DAY];
  await db.sql.query(
    `insert into send_windows (organization_id, kind, window_start, messages, recipients)
     select $1, w.kind, to_timestamp(w.s / 1000.0), 1, 1 from unnest($2::text[], $3::int8[]) as w(kind, s)`,
    [
      org,
      [...endedMinutes.map(() => "minute"), ...keptMinutes.map(() => "minute"), ...endedDays.map(() => "day"), "day"],
      [...endedMinutes, ...keptMinutes, ...endedDays, day],
    ],
  );

  // Other test files share this database and leave windows of their own: a round may end at its bound of batches
  // before it reaches these, so rounds run until one finds nothing left, each within its bound.
  let pruned = 0;
  for (let round = 0; round < 1000; round++) {
    const n = await pruneCounterWindows(db, { now: new Date(now), batchSize: 3 });
    expect(n).toBeLessThanOrEqual(2 * 3 * MAX_PRUNE_BATCHES);
    pruned += n;
    if (n === 0) break;
  }
  expect(pruned).toBeGreaterThanOrEqual(10 + 10 + 3);

  const requestWindows = await db.sql.query<{ start: string }>(
    "select (extract(epoch from window_start) * 1000)::int8 as start from request_windows where key_id = $1 order by 1 desc",
    [key],
  );
  expect(requestWindows.map((w) => Number(w.start))).toEqual(keptMinutes);
  const sendWindows = await db.sql.query<{ kind: string; start: string }>(
    "select kind, (extract(epoch from window_start) * 1000)::int8 as start from send_windows where organization_id = $1 order by 1, 2 desc",
    [org],
  );
  expect(sendWindows.map((w) => [w.kind, Number(w.start)])).toEqual([["day", day], ...keptMinutes.map((m) => ["minute", m])]);
});
