// Durable acceptance with grouped commits (real PostgreSQL): messages stored at the same moment share INSERTs, each
// resolves only once its row is committed, and a group that fails fails its own messages only.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Database } from "../../src/db/database.js";
import { createRawMessageStore, type ReceivedMessage } from "../../src/inbound/receive.js";
import { startTestApp, type TestApp } from "../support/harness.js";

let app: TestApp;
const stored: string[] = [];

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.db.sql.query(`delete from inbound_raw_messages where id = any($1::uuid[])`, [stored]);
  await app?.stop();
});

/** The app's database, counting the statements the store sends. */
function countingDb(): { db: Database; statements: () => number } {
  let statements = 0;
  const sql = {
    ...app.db.sql,
    query: (text: string, values?: readonly unknown[]) => {
      statements++;
      return app.db.sql.query(text, values);
    },
  };
  return { db: { ...app.db, sql } as Database, statements: () => statements };
}

function received(mailFrom = "sender@example.org"): ReceivedMessage {
  return {
    mailFrom,
    recipients: [{ address: "agent@agents.test", inboxId: `inb_${randomBytes(12).toString("hex")}` }] as ReceivedMessage["recipients"],
    session: { remoteIp: "127.0.0.1", helo: "client.example", tls: null },
    raw: Buffer.concat([Buffer.from("Subject: grouped\r\n\r\n"), randomBytes(2048)]),
  };
}

test("messages stored at once share INSERTs, and each is committed with its bytes when it resolves", async () => {
  const { db, statements } = countingDb();
  const store = createRawMessageStore(db);
  const messages = Array.from({ length: 40 }, () => received());
  const ids = await Promise.all(messages.map((m) => store.store(m)));
  stored.push(...ids);
  expect(new Set(ids).size).toBe(40);
  expect(statements()).toBeLessThan(40);
  const rows = await app.db.sql.query<{ id: string; raw: Buffer; inbox_ids: string[]; status: string; size: number }>(
    `select id, raw, inbox_ids, status, size from inbound_raw_messages where id = any($1::uuid[])`,
    [ids],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  messages.forEach((m, i) => {
    const row = byId.get(ids[i]!);
    expect(row).toMatchObject({ status: "pending", size: m.raw.length, inbox_ids: [m.recipients[0]!.inboxId] });
    expect(row!.raw.equals(m.raw)).toBe(true);
  });
});

test("a group whose INSERT fails rejects its own messages, and later ones are stored", async () => {
  const store = createRawMessageStore(app.db);
  // A NUL cannot be stored in a text column: the whole statement fails.
  const results = await Promise.allSettled([store.store(received()), store.store(received("bad\u0000@example.org")), store.store(received())]);
  expect(results[1]!.status).toBe("rejected");
  for (const r of results) if (r.status === "fulfilled") stored.push(r.value);
  const after = await store.store(received());
  stored.push(after);
  const [row] = await app.db.sql.query(`select status from inbound_raw_messages where id = $1`, [after]);
  expect(row).toMatchObject({ status: "pending" });
  // Nothing of a rejected message was committed.
  const committed = await app.db.sql.query(`select id from inbound_raw_messages where mail_from like 'bad%'`);
  expect(committed).toEqual([]);
});
