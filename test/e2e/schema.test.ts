// The committed migrations and the entities describe the same schema: nothing is left for a migration to do.
import { expect, inject, test } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { UNIQUE_CONFLICTS } from "../../src/db/unique-conflicts.js";

test("the migrated database matches the entities exactly", async () => {
  const db = await openDatabase(inject("databaseUrl"), { poolMax: 1 });
  try {
    expect((await db.orm.schema.getUpdateSchemaSQL({ wrap: false })).trim()).toBe("");
  } finally {
    await db.close();
  }
});

test("every unique constraint the error boundary maps to a conflict exists, as a unique index, under that name", async () => {
  const db = await openDatabase(inject("databaseUrl"), { poolMax: 1 });
  try {
    const rows = await db.sql.query<{ name: string }>(
      `select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
        join pg_namespace n on n.oid = c.relnamespace
        where i.indisunique and n.nspname = current_schema() and c.relname = any($1)`,
      [Object.keys(UNIQUE_CONFLICTS)],
    );
    expect(rows.map((r) => r.name).sort()).toEqual(Object.keys(UNIQUE_CONFLICTS).sort());
  } finally {
    await db.close();
  }
});
