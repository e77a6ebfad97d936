// The committed migrations and the entities describe the same schema: nothing is left for a migration to do.
import { expect, inject, test } from "vitest";
import { openDatabase } from "../../src/db/database.js";

test("the migrated database matches the entities exactly", async () => {
  const db = await openDatabase(inject("databaseUrl"), { poolMax: 1 });
  try {
    expect((await db.orm.schema.getUpdateSchemaSQL({ wrap: false })).trim()).toBe("");
  } finally {
    await db.close();
  }
});
