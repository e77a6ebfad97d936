// What the storage migrations promise (Migration20261129090000_delivery_outbox_pages, Migration20261129100000_message_text_lz4):
// a webhook outbox row's delivered update stays on its row's page; the partial status index (open deliveries only)
// serves every query that looks for open deliveries (the reconciler's, an endpoint's in-flight count and its delete's
// drop of pending rows); messages' text and HTML are lz4-compressed where the server has lz4.
import { afterAll, beforeAll, expect, test } from "vitest";
import { openDatabase, type Database } from "../../src/db/database.js";
import { newId, newUuid } from "../../src/ids.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";

let file: FileDatabase;
let db: Database;
const organizationId = newUuid();
const endpointId = newId("whk");

beforeAll(async () => {
  file = await createFileDatabase();
  db = await openDatabase(file.url, { poolMax: 2 });
  await db.sql.query(
    `insert into organizations (id, name, messages_per_minute, messages_per_day, recipients_per_day, managed_limit, created_at, updated_at)
     values ($1, 'outbox storage', 1, 1, 1, 1, now(), now())`,
    [organizationId],
  );
});
afterAll(async () => {
  await db?.close();
  await file?.drop();
});

/** Outbox rows in the state given, with a payload of a real one's size; answers their ids. */
async function deliveries(n: number, status: string): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newUuid());
  await db.sql.query(
    `insert into webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, status, attempts, last_attempt_at, created_at, updated_at)
     select id, $2, $3, 'evt_' || left(md5(id::text), 24), 'message.received', repeat('x', 700), $4, 1, now() - interval '1 hour', now() - interval '1 hour', now()
       from unnest($1::uuid[]) as id`,
    [ids, organizationId, endpointId, status],
  );
  return ids;
}

/** The page of a row (the block of its ctid). */
async function pageOf(id: string): Promise<number> {
  const [row] = await db.sql.query<{ page: string }>(`select (ctid::text::point)[0]::text as page from webhook_deliveries where id = $1`, [id]);
  return Number(row!.page);
}

test("an outbox row's delivered update stays on its page", async () => {
  const ids = await deliveries(40, "delivering");
  const before = await Promise.all(ids.map(pageOf));
  // The update the deliverer makes when the answer comes (src/webhooks/deliveries.ts).
  await db.sql.query(`update webhook_deliveries set status = 'delivered', last_error = null, updated_at = now() where id = any($1::uuid[])`, [ids]);
  // At full pages (fill factor 100) every new version moved to another page.
  expect(await Promise.all(ids.map(pageOf))).toEqual(before);
});

test("the partial status index serves every query for open deliveries", async () => {
  await deliveries(2000, "delivered");
  await deliveries(5, "pending");
  await deliveries(5, "delivering");
  await db.sql.query(`analyze webhook_deliveries`);
  const queries = [
    // The reconciler (webhookDeliveryReconciler), as MikroORM writes it.
    `select w0.* from webhook_deliveries as w0
      where ((w0.status = 'pending' and w0.attempts = 0 and w0.created_at < now() - interval '1 minute')
          or (w0.status = 'pending' and w0.attempts > 0 and w0.last_attempt_at < now() - interval '1 hour')
          or (w0.status = 'delivering' and w0.last_attempt_at < now() - interval '40 seconds'))
      order by w0.created_at asc limit 1000`,
    // An endpoint's in-flight count (inFlightDeliveries) and its delete's drop of pending rows.
    `select count(*) from webhook_deliveries where endpoint_id = '${endpointId}' and status = 'delivering' and last_attempt_at > now() - interval '40 seconds'`,
    `update webhook_deliveries set status = 'failed' where endpoint_id = '${endpointId}' and status = 'pending'`,
  ];
  for (const query of queries) {
    const plan = await db.sql.transaction(async (tx) => {
      // Whether the index can serve the query at all (its predicate implied), not whether this small table's costs pick it.
      await tx.query(`set local enable_seqscan = off`);
      await tx.query(`set local enable_bitmapscan = off`);
      return tx.query<{ "QUERY PLAN": string }>(`explain ${query}`);
    });
    const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
    expect(text, text).toContain("webhook_deliveries_open_status_created_at_index");
  }
});

test("messages' text and HTML are compressed with lz4 where the server has it, else with its default", async () => {
  const [server] = await db.sql.query<{ lz4: boolean }>(
    `select 'lz4' = any(enumvals) as lz4 from pg_settings where name = 'default_toast_compression'`,
  );
  const columns = await db.sql.query<{ attname: string; attcompression: string }>(
    `select attname, attcompression::text from pg_attribute where attrelid = 'messages'::regclass and attname in ('text', 'html') order by attname`,
  );
  const method = server!.lz4 ? "l" : "";
  expect(columns).toEqual([
    { attname: "html", attcompression: method },
    { attname: "text", attcompression: method },
  ]);
});
