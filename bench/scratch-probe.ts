import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { issueKey } from "../src/admin/api-keys.js";
import { createOrganization } from "../src/admin/organizations.js";
import { loadConfig } from "../src/config.js";
import { migrateDatabase, openDatabase } from "../src/db/database.js";
import { startEmbeddedPostgres } from "../src/runtime/embedded-postgres.js";
import { ensureTemporalCli } from "../src/runtime/temporal-cli.js";
import { startTemporalDevServer } from "../src/runtime/temporal-dev-server.js";

const dir = await mkdtemp(join(tmpdir(), "probe-"));
await chmod(dir, 0o755);
const logs: string[] = [];
const pgs = await startEmbeddedPostgres({ dataDir: dir, log: (l) => logs.push(l) });
const temporal = await startTemporalDevServer({ cliPath: await ensureTemporalCli({ toolsDir: resolve(".tools") }), headless: true });
try {
  const db = await openDatabase(pgs.url);
  await migrateDatabase(db);
  const config = loadConfig({});
  const org = await createOrganization(db.fork(), config.defaults, { name: "p" });
  const { secret } = await issueKey(db.fork(), config.defaults, org.id, { scopes: ["*"] });
  await db.close();
  const c = new pg.Client(pgs.url);
  await c.connect();
  await c.query("alter system set log_statement = 'all'");
  await c.query("select pg_reload_conf()");
  await c.end();
  const child = spawn(process.execPath, ["src/cli/mailbox.js", "serve", "--role", "api"], {
    env: { ...process.env, DATABASE_URL: pgs.url, TEMPORAL_ADDRESS: temporal.address, HTTP_PORT: "0", LOG_LEVEL: "error", DATA_DIR: dir, CURSOR_SECRET: "x".repeat(40) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise<string>((r) => createInterface({ input: child.stdout! }).once("line", r));
  const url = JSON.parse(line).api as string;
  logs.length = 0;
  for (const p of ["/v1/me", "/v1/inboxes?limit=20", "/v1/me"]) {
    const res = await fetch(url + p, { headers: { "x-api-key": secret } });
    console.log(p, res.status, await res.text());
  }
  await new Promise((r) => setTimeout(r, 500));
  console.log(logs.filter((l) => /statement|execute/.test(l)).join("\n"));
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
} finally {
  await temporal.stop();
  await pgs.stop();
  await rm(dir, { recursive: true, force: true });
}
process.exit(0);
