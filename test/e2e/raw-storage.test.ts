// Received mail's raw bytes are stored without compression (Migration20261128090000_raw_storage): they live only until
// the message is stored, and PostgreSQL's pglz attempt on them — base64 text most of all — cost CPU for nothing. Read
// back from the catalog and from the rows the real receive path writes: a compressible spooled message's chunks and
// a compressible small message's row are kept as they came, every byte.
import { randomUUID } from "node:crypto";
import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { openDatabase, type Database } from "../../src/db/database.js";
import { createRawMessageStore, type ReceivedEnvelope } from "../../src/inbound/receive.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";

// A database of its own: no processor picks up (and deletes) the raw rows written here.
let database: FileDatabase;
let db: Database;
let dir: string;
beforeAll(async () => {
  database = await createFileDatabase();
  db = await openDatabase(database.url, { poolMax: 2 });
  dir = await mkdtemp(join(tmpdir(), "raw-storage-"));
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const envelope: ReceivedEnvelope = {
  mailFrom: "sender@example.org",
  recipients: [{ address: "inbox@agents.test", inboxId: randomUUID() }],
  session: { remoteIp: "192.0.2.1", helo: "client.example", tls: null },
};

/** Text pglz compresses well: a newsletter's repeated lines. */
const compressible = (bytes: number) => Buffer.from("Subject: x\r\n\r\n" + "the same line of a long newsletter, again\r\n".repeat(Math.ceil(bytes / 43))).subarray(0, bytes);

test("the raw columns are stored EXTERNAL: out of line, never compressed", async () => {
  const rows = await db.sql.query<{ table: string; column: string; storage: string }>(
    `select c.relname as table, a.attname as column, a.attstorage as storage from pg_attribute a join pg_class c on c.oid = a.attrelid
      where (c.relname, a.attname) in (('inbound_raw_chunks', 'data'), ('inbound_raw_messages', 'raw')) order by 1`,
  );
  expect(rows).toEqual([
    { table: "inbound_raw_chunks", column: "data", storage: "e" },
    { table: "inbound_raw_messages", column: "raw", storage: "e" },
  ]);
});

test("a compressible message committed in chunks, and a small one in its row, are kept uncompressed and whole", async () => {
  const store = createRawMessageStore(db);
  const large = compressible(1_200_000);
  const path = join(dir, "spool.eml");
  await writeFile(path, large);
  const file = await open(path, "r");
  let spooledId: string;
  try {
    spooledId = await store.storeSpooled(envelope, file, large.length);
  } finally {
    await file.close();
  }
  const chunks = await db.sql.query<{ compression: string | null; data: Buffer }>(
    `select pg_column_compression(data) as compression, data from inbound_raw_chunks where raw_message_id = $1 order by seq`,
    [spooledId],
  );
  expect(chunks.length).toBeGreaterThan(1);
  expect(chunks.map((c) => c.compression)).toEqual(chunks.map(() => null));
  expect(Buffer.concat(chunks.map((c) => c.data)).equals(large)).toBe(true);

  const small = compressible(10_000);
  const smallId = await store.store({ ...envelope, raw: small });
  const [row] = await db.sql.query<{ compression: string | null; raw: Buffer }>(
    `select pg_column_compression(raw) as compression, raw from inbound_raw_messages where id = $1`,
    [smallId],
  );
  expect(row!.compression).toBeNull();
  expect(row!.raw.equals(small)).toBe(true);
});
