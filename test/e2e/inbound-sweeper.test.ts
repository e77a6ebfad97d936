// The sweeper over real PostgreSQL: stale pending rows are handed over oldest first, page after page, until the
// processor's queue is full; rows it already holds are passed over; young rows are left to their own process.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startInboundSweeper } from "../../src/inbound/sweeper.js";
import { createLogger } from "../../src/logger.js";
import { eventually, startTestApp, type TestApp } from "../support/harness.js";

let app: TestApp;
const ids: string[] = [];

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.db.sql.query(`delete from inbound_raw_messages where id = any($1::uuid[])`, [ids]);
  await app?.stop();
});

/** Pending raw rows received `ageMs` ago, a millisecond apart, oldest first. */
async function pendingRows(count: number, ageMs: number): Promise<string[]> {
  const made = Array.from({ length: count }, () => randomUUID());
  ids.push(...made);
  await app.db.sql.query(
    `insert into inbound_raw_messages (id, received_at, mail_from, rcpt_to, inbox_ids, remote_ip, helo, size, raw, status, attempts)
     select id, now() - make_interval(secs => ($2::int - ord) / 1000.0), 's@example.org', '{}', '{}', '127.0.0.1', 'sweeper.test', 1, '\\x00', 'pending', 0
       from unnest($1::uuid[]) with ordinality as r(id, ord)`,
    [made, ageMs + count],
  );
  return made;
}

/** A processor that takes ids until it holds `capacity`, and says which it was given, in order. */
function recordingProcessor(capacity: number) {
  const held = new Set<string>();
  const given: string[] = [];
  return {
    held,
    given,
    submit(rawId: string) {
      if (held.has(rawId)) return true;
      if (held.size >= capacity) return false;
      held.add(rawId);
      given.push(rawId);
      return true;
    },
  };
}

test("hands over every stale row, page after page, until the queue is full, and the rest once there is room", async () => {
  const stale = await pendingRows(1_300, 60_000);
  const young = await pendingRows(5, 0);
  const processor = recordingProcessor(100_000);
  const sweeper = startInboundSweeper(app.db, processor, createLogger("error"), { intervalMs: 60_000, staleAfterMs: 30_000 });
  try {
    await eventually(async () => (stale.every((id) => processor.held.has(id)) ? true : undefined));
    // Oldest first, more than one page in a single sweep, and the young rows left alone.
    const mine = processor.given.filter((id) => stale.includes(id));
    expect(mine).toEqual(stale);
    expect(young.some((id) => processor.held.has(id))).toBe(false);
  } finally {
    await sweeper.stop();
  }
});

test("stops at a full queue, passes over what the processor holds, and takes the rest at the next sweep", async () => {
  const stale = await pendingRows(700, 60_000);
  // Room for every other test's stale rows as well as ~half of these.
  const before = (await app.db.sql.query<{ n: number }>(`select count(*)::int as n from inbound_raw_messages where status = 'pending'`))[0]!.n;
  const processor = recordingProcessor(before - 350);
  const sweeper = startInboundSweeper(app.db, processor, createLogger("error"), { intervalMs: 200, staleAfterMs: 30_000 });
  try {
    await eventually(async () => (processor.held.size === before - 350 ? true : undefined));
    const firstTaken = stale.filter((id) => processor.held.has(id)).length;
    expect(firstTaken).toBeLessThan(700);
    // The processor finishes what it held (the rows are done): the next sweeps take the rest.
    await app.db.sql.query(`update inbound_raw_messages set status = 'failed' where id = any($1::uuid[])`, [[...processor.held].filter((id) => stale.includes(id))]);
    processor.held.clear();
    await eventually(async () => (stale.every((id) => processor.given.includes(id)) ? true : undefined));
  } finally {
    await sweeper.stop();
  }
});
