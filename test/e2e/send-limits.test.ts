// The organization's send limits under concurrency: counting a send does not make the organization's other sends
// wait for its commit, a refused send does not count, and concurrent sends pass a limit by at most
// SEND_WINDOW_SHARDS - 1 (the documented bound of counting in shards).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { openDatabase, type Database, type SqlTx } from "../../src/db/database.js";
import { RateLimited } from "../../src/errors.js";
import { countSend, SEND_WINDOW_SHARDS } from "../../src/outbound/send-limits.js";
import { startTestApp, uniqueName, type TestApp } from "../support/harness.js";

let app: TestApp;
/** Connections of the test's own, so a transaction can be held open on one while another commits. */
let db: Database;
beforeAll(async () => {
  app = await startTestApp({ SMTP_ROUTES: "*=127.0.0.1:9" });
  db = await openDatabase(inject("databaseUrl"), { poolMax: 2 * SEND_WINDOW_SHARDS + 2 });
});
afterAll(async () => {
  await app?.stop();
  await db?.close();
});

/** A transaction on a connection of its own, held open until `release` is called. */
async function openTransaction(): Promise<{ shard: number; tx: SqlTx; release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let ready!: (v: { shard: number; tx: SqlTx }) => void;
  const opened = new Promise<{ shard: number; tx: SqlTx }>((resolve) => (ready = resolve));
  const done = db.sql.transaction(async (tx) => {
    const [row] = await tx.query<{ pid: number }>("select pg_backend_pid() as pid");
    ready({ shard: row!.pid % SEND_WINDOW_SHARDS, tx });
    await released;
  });
  const { shard, tx } = await Promise.race([opened, done.then(() => Promise.reject(new Error("transaction ended early")))]);
  return {
    shard,
    tx,
    async release() {
      release();
      await done;
    },
  };
}

test("a send counted but not committed yet does not hold up another send of the same organization", async () => {
  const tenant = await app.createTenant({ messagesPerMinute: 1000, messagesPerDay: 1000, recipientsPerDay: 1000 });
  const tenantTx = (tx: SqlTx) => ({ organizationId: tenant.organizationId, query: tx.query.bind(tx) });
  // Two transactions on connections of different shards (open more until one differs from the first).
  const first = await openTransaction();
  const others: Awaited<ReturnType<typeof openTransaction>>[] = [];
  try {
    let second: Awaited<ReturnType<typeof openTransaction>> | undefined;
    while (!second) {
      const candidate = await openTransaction();
      others.push(candidate);
      if (candidate.shard !== first.shard) second = candidate;
    }
    await countSend(tenantTx(first.tx), 1, new Date());
    // With one counter row per window this waited for the first transaction's commit (here: failed at the timeout).
    await second.tx.query("set local lock_timeout = '10s'");
    await countSend(tenantTx(second.tx), 1, new Date());
  } finally {
    for (const t of others) await t.release();
    await first.release();
  }
  const [row] = await db.sql.query<{ messages: number }>(
    "select sum(messages)::int as messages from send_windows where organization_id = $1 and kind = 'day'",
    [tenant.organizationId],
  );
  expect(row!.messages).toBe(2);
});

test("a send refused by a limit does not count, and concurrent sends pass a limit by at most SEND_WINDOW_SHARDS - 1", async () => {
  const limit = 5;
  const tenant = await app.createTenant({ messagesPerMinute: 1000, messagesPerDay: limit, recipientsPerDay: 1000 });
  const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("limits"), displayName: "L" } });
  expect(inbox.status).toBe(201);
  const send = () =>
    tenant.request("POST", `/v1/inboxes/${inbox.body.id}/messages`, {
      body: { to: [{ email: "someone@example.com" }], subject: "limits", text: "hello" },
      headers: { "idempotency-key": `k-${randomBytes(8).toString("hex")}` },
    });
  const answers = await Promise.all(Array.from({ length: 3 * limit + SEND_WINDOW_SHARDS }, send));
  const accepted = answers.filter((a) => a.status === 202).length;
  for (const a of answers.filter((a) => a.status !== 202)) expect([a.status, a.body.error]).toEqual([429, "send_limit_exceeded"]);
  expect(accepted).toBeGreaterThanOrEqual(limit);
  expect(accepted).toBeLessThanOrEqual(limit + SEND_WINDOW_SHARDS - 1);
  // Only the accepted sends counted: the window holds exactly them, and the next send is refused.
  const [row] = await db.sql.query<{ messages: number }>(
    "select sum(messages)::int as messages from send_windows where organization_id = $1 and kind = 'day'",
    [tenant.organizationId],
  );
  expect(row!.messages).toBe(accepted);
  expect((await send()).status).toBe(429);
});

test("counting refuses the send that passes a limit, in the sending transaction", async () => {
  const tenant = await app.createTenant({ messagesPerMinute: 1, messagesPerDay: 1000, recipientsPerDay: 1000 });
  // One instant for both, so they count in the same minute.
  const at = new Date();
  const count = () => db.sql.transaction((tx) => countSend({ organizationId: tenant.organizationId, query: tx.query.bind(tx) }, 1, at));
  await count();
  await expect(count()).rejects.toBeInstanceOf(RateLimited);
});
