// The holds migration (Migration20261127120000_holds) on a database as the release before it left it, with mail in
// it: reverted to the migration before (sender_trust, the last of that release), the database migrates forward
// again, fills contacts from the mail already stored (senders of inbound mail, To recipients of outbound mail, lower-
// cased, with their domains) and ends equal to the entities.
import { expect, test } from "vitest";
import { createFileDatabase } from "../support/file-database.js";
import { startTestApp, uniqueName } from "../support/harness.js";
import { storeInbound } from "../support/mail-fixtures.js";

test("a database of the release before holds, with mail, migrates forward and knows its contacts", async () => {
  // Its own database: reverting a migration must not pull the schema from under the other files.
  const database = await createFileDatabase();
  const app = await startTestApp({ DATABASE_URL: database.url });
  try {
    const tenant = await app.createTenant();
    const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("migrated"), displayName: "Migrated" } })).body;
    await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: inbox.id, from: "Customer@Example.net" });
    const sent = await tenant.request("POST", `/v1/inboxes/${inbox.id}/messages`, {
      body: { to: [{ email: "bob@example.org" }], subject: "s", text: "t" },
      headers: { "idempotency-key": uniqueName("migrated") },
    });
    expect(sent.status).toBe(202);

    const migrator = app.db.orm.migrator;
    await migrator.down({ to: "Migration20261127100000_sender_trust" });
    const [before] = await app.db.sql.query<{ n: number }>("select count(*)::int as n from information_schema.tables where table_name = 'contacts'");
    expect(before!.n).toBe(0);
    // holds first, then every migration after it.
    expect((await migrator.up()).map((m) => m.name)[0]).toBe("Migration20261127120000_holds");

    const contacts = await app.db.sql.query<{ own_address: string; address: string; domain: string }>(
      "select own_address, address, domain from contacts where organization_id = $1 order by address",
      [tenant.organizationId],
    );
    expect(contacts).toEqual([
      { own_address: inbox.address, address: "bob@example.org", domain: "example.org" },
      { own_address: inbox.address, address: "customer@example.net", domain: "example.net" },
    ]);
    expect((await app.db.orm.schema.getUpdateSchemaSQL({ wrap: false })).trim()).toBe("");
  } finally {
    await app.stop();
    await database.drop();
  }
});
