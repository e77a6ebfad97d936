import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { issueKey } from "../src/admin/api-keys.js";
import { createOrganization } from "../src/admin/organizations.js";
import { loadConfig } from "../src/config.js";
import { migrateDatabase, openDatabase } from "../src/db/database.js";
import { ApiKey, Inbox, Organization } from "../src/db/entities/index.js";
import { TenantStore } from "../src/db/tenant-store.js";
import { startEmbeddedPostgres } from "../src/runtime/embedded-postgres.js";

const dir = await mkdtemp(join(tmpdir(), "micro-"));
await chmod(dir, 0o755);
const pgs = await startEmbeddedPostgres({ dataDir: dir });
try {
  const db = await openDatabase(pgs.url);
  await migrateDatabase(db);
  const config = loadConfig({});
  const org = await createOrganization(db.fork(), config.defaults, { name: "p" });
  const { key, secret } = await issueKey(db.fork(), config.defaults, org.id, { scopes: ["*"] });
  const lookupId = key.lookupId;
  const pool = new pg.Pool({ connectionString: pgs.url, max: 20 });
  const c = await pool.connect();
  await c.query(`insert into inboxes select 'inb_' || substr(md5(random()::text),1,24), $1, 'a'||i, 'd', 'a'||i||'@d', 'managed', null, 'A', 'active', now() - i * interval '1 s', now(), null from generate_series(1,50) i`, [org.id]);
  c.release();
  const N = Number(process.env.N ?? 3000);
  async function time(name: string, fn: () => Promise<unknown>) {
    if (process.env.CASE && !name.includes(process.env.CASE)) return;
    for (let i = 0; i < 300; i++) await fn();
    const cpu0 = process.cpuUsage(); const t0 = performance.now();
    for (let i = 0; i < N; i++) await fn();
    const cpu = process.cpuUsage(cpu0); const wall = performance.now() - t0;
    console.log(`${name.padEnd(40)} wall ${(wall / N * 1000).toFixed(0).padStart(5)} µs/op   cpu ${((cpu.user + cpu.system) / N).toFixed(0).padStart(5)} µs/op`);
  }
  await time("pg: select org", () => pool.query(`select "o0".* from "organizations" as "o0" where "o0"."id" = $1 limit 1`, [org.id]));
  await time("orm: fork().findOne(Organization)", () => db.fork().findOne(Organization, org.id));
  await time("orm: fork().findOne(ApiKey,$or,populate)", () => db.fork().findOne(ApiKey, { $or: [{ lookupId }, { previousLookupId: lookupId }] }, { populate: ["organization"] }));
  const upsert = `insert into request_windows (key_id, window_start, count) values (?, to_timestamp(?), 1) on conflict (key_id, window_start) do update set count = request_windows.count + 1 returning count`;
  await time("orm: getConnection().execute(upsert)", () => db.fork().getConnection().execute(upsert, [key.id, 1000]));
  await time("pg: upsert", () => pool.query(upsert.replace("?", "$1").replace("?", "$2"), [key.id, 1000]));
  await time("orm: store.find(Inbox) 21", () => new TenantStore(db.fork(), org.id).find(Inbox, { status: "active" }, { orderBy: [{ createdAt: "desc" }, { id: "desc" }], limit: 21 }));
  await time("pg: select inboxes 21", () => pool.query(`select "i0".* from "inboxes" as "i0" where "i0"."status" = $1 and "i0"."organization_id" = $2 order by "i0"."created_at" desc, "i0"."id" desc limit $3`, ["active", org.id, 21]));
  await time("orm: fork() + flush() no changes", async () => { await db.fork().flush(); });
  void secret;
  await pool.end();
  await db.close();
} finally {
  await pgs.stop();
  await rm(dir, { recursive: true, force: true });
}
process.exit(0);
