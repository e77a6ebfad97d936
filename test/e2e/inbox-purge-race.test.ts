// The purge deletes an inbox's rows children first; a row that a running delivery updates while the purge deletes
// it must still go, or its parent is deleted next and the child is left behind.
import { afterAll, beforeAll, expect, test } from "vitest";
import pg from "pg";
import { inject } from "vitest";
import { createInboxPurgeActivities } from "../../src/temporal/activities/inbox-purge.js";
import { seedSubmission } from "../support/delivery-rows.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.stop());

test("a recipient row updated by a delivery while the purge deletes it is deleted, not orphaned", async () => {
  const tenant = await app.createTenant();
  const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("purge"), displayName: "P" } });
  const submission = await seedSubmission(app.db, tenant.organizationId, { recipients: [{ status: "queued" }] });
  await app.db.sql.query("update submissions set inbox_id = $1 where id = $2", [inbox.body.id, submission.id]);

  // A delivery's bookkeeping holds the recipient row while the purge's delete reaches it.
  const delivery = new pg.Client({ connectionString: inject("databaseUrl") });
  await delivery.connect();
  try {
    await delivery.query("begin");
    await delivery.query("update submission_recipients set attempts = attempts + 1 where submission_id = $1", [submission.id]);
    const purge = createInboxPurgeActivities(app.db);
    const batch = purge.purgeMailboxBatch(inbox.body.id, 100);
    await eventually(async () => {
      const [row] = await app.db.sql.query<{ waiting: number }>(
        "select count(*)::int as waiting from pg_stat_activity where wait_event_type = 'Lock' and query like 'delete from submission_recipients%'",
        [],
      );
      return row!.waiting > 0 ? true : undefined;
    });
    await delivery.query("commit");
    await batch;
    while ((await purge.purgeMailboxBatch(inbox.body.id, 100)) > 0);
  } finally {
    await delivery.end();
  }
  const left = await app.db.sql.query<{ n: number }>(
    "select (select count(*) from submission_recipients where submission_id = $1)::int + (select count(*) from submissions where id = $1)::int as n",
    [submission.id],
  );
  expect(left[0]!.n).toBe(0);
});
