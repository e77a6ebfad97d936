// The driver's pool (db.sql) when PostgreSQL cuts a connection (a restart, an administrator): the statement fails,
// the process goes on, and the pool serves the next statement on a new connection.
import pg from "pg";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { openDatabase, type Database } from "../../src/db/database.js";

let db: Database;
let admin: pg.Client;

beforeAll(async () => {
  db = await openDatabase(inject("databaseUrl"), { poolMax: 2 });
  admin = new pg.Client({ connectionString: inject("databaseUrl") });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await db?.close();
});

test("a transaction whose connection is cut fails without ending the process, and the pool goes on", async () => {
  const cut = db.sql.transaction(async (tx) => {
    const [{ pid }] = await tx.query<{ pid: number }>("select pg_backend_pid() as pid");
    const sleeping = tx.query("select pg_sleep(30)");
    // It may fail before the termination below answers: handled now, awaited (and rethrown) after.
    sleeping.catch(() => undefined);
    await admin.query("select pg_terminate_backend($1)", [pid]);
    await sleeping;
  });
  await expect(cut).rejects.toThrow(/terminat/);
  expect(await db.sql.query("select 1 as one")).toEqual([{ one: 1 }]);
  expect(await db.sql.transaction((tx) => tx.query("select 2 as two"))).toEqual([{ two: 2 }]);
});
