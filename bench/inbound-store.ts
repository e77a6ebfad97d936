// `npm run bench:inbound-store`: what storing parsed inbound mail costs, the store alone (src/inbound/store.ts), on
// an embedded PostgreSQL of its own with pg_stat_statements: 10 KB messages as bench:inbound sends them (plain text,
// one inbox each, no thread to join), parsed beforehand, their raw rows committed, then stored in batches of
// BENCH_STORE_BATCH. It prints the statements one batch sends with their calls and share of PostgreSQL's execution
// time, and per stored message: statements, this process's CPU (the store's share of the processing thread) and
// PostgreSQL's CPU (every backend, /proc). The parse runs before the meter starts; webhook dispatch is left out
// (the outbox rows are written, one endpoint, as in bench:inbound).
//
// Settings (env): BENCH_STORE_MESSAGES=2048  BENCH_STORE_BATCH=64  BENCH_STORE_ROUNDS=2 (the first warms up, unmeasured)
//   BENCH_STORE_SQL (statements run after the migrations: an experiment's schema change)
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { loadConfig } from "../src/config.js";
import { openDatabase, type SqlPool } from "../src/db/database.js";
import { newId } from "../src/ids.js";
import { createRawMessageStore, type ReceivedMessage } from "../src/inbound/receive.js";
import { prepareRaw, rawRowOf, StoreClock, storeBatch, type InboundStoreDeps, type ParsedRaw } from "../src/inbound/store.js";
import { createLogger } from "../src/logger.js";
import { createEmailParser } from "../src/mail/parse.js";
import { startEmbeddedPostgres } from "../src/runtime/embedded-postgres.js";
import { createWebhookOutbox } from "../src/webhooks/outbox.js";
import { startCpuMeter, withChildren } from "./cpu.js";
import { loadAverage } from "./machine.js";
import { headerFor, bodyFor } from "./inbound-message.js";
import { seed } from "./seed.js";
import { envNumber } from "./settings.js";

const MESSAGES = envNumber(process.env, "BENCH_STORE_MESSAGES", 2048, 1, 100_000);
const BATCH = envNumber(process.env, "BENCH_STORE_BATCH", 64, 1, 64);
const ROUNDS = envNumber(process.env, "BENCH_STORE_ROUNDS", 2, 1, 10);
const INBOXES = 100;
/** The tables a store writes. */
const WRITTEN_TABLES = ["messages", "threads", "contacts", "events", "webhook_deliveries", "inbound_raw_messages"];
/** Backends flush their statistics at most this long after a transaction (PGSTAT_MIN_INTERVAL is 1 s). */
const STATS_FLUSH_MS = 1500;
const MESSAGE_BYTES = 10_240;

const dataDir = await mkdtemp(join(tmpdir(), "bench-store-"));
let postgres = await startEmbeddedPostgres({ dataDir });
try {
  // pg_stat_statements needs its library loaded at start: set, then started again on the same data directory.
  const setup = new pg.Client({ connectionString: postgres.url });
  await setup.connect();
  await setup.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
  // Planning counted too: a statement sent as text is parsed and planned at every call.
  await setup.query(`alter system set pg_stat_statements.track_planning = on`);
  await setup.end();
  const port = Number(new URL(postgres.url).port);
  await postgres.stop();
  postgres = await startEmbeddedPostgres({ dataDir, port });
  await run(postgres.url, postgres.pid);
} finally {
  await postgres.stop();
  await rm(dataDir, { recursive: true, force: true });
}

async function run(url: string, postmasterPid: number): Promise<void> {
  const config = loadConfig({ ...process.env, DATABASE_URL: url });
  await seed(url, { organizations: 1, inboxesPerOrganization: INBOXES, managedDomain: config.managedDomain, defaults: config.defaults });
  const stats = new pg.Client({ connectionString: url });
  await stats.connect();
  await stats.query(`create extension if not exists pg_stat_statements`);
  // An experiment's schema change, applied after the migrations (say, a column's compression).
  if (process.env["BENCH_STORE_SQL"]) await stats.query(process.env["BENCH_STORE_SQL"]).catch((e: unknown) => console.log("BENCH_STORE_SQL failed:", e));
  const inboxes = (await stats.query<{ id: string; address: string; organization_id: string }>(`select id, address, organization_id from inboxes order by id`)).rows;
  const now = new Date();
  await stats.query(
    `insert into webhook_endpoints (id, organization_id, url, events, signing_secret, signing_secret_replay_until, idempotency_key, request_hash, created_at, updated_at)
     values ($1, $2, 'https://127.0.0.1:9/hook', '{message.received}', $3, $4, $5, '', $4, $4)`,
    [newId("whk"), inboxes[0]!.organization_id, randomBytes(32).toString("hex"), now, randomBytes(8).toString("hex")],
  );
  const db = await openDatabase(url, { poolMax: 8 });
  const log = createLogger("error");
  const parser = createEmailParser({
    timeoutMs: config.inbound.parseTimeoutMs,
    memoryMb: config.inbound.parseMemoryMb,
    workers: 2,
    maxHeaderBytes: config.smtp.maxHeaderBytes,
    maxMimeParts: config.smtp.maxMimeParts,
  });
  const outbox = createWebhookOutbox({
    db,
    deliverer: { attempt: async () => ({ outcome: "failed" }), complete: async () => ({ outcome: "failed" }) } as never,
    retries: { start: async () => undefined } as never,
    log,
  });
  const deps: InboundStoreDeps = {
    db,
    parser,
    // Written in the transaction as always; the prompt attempts are not this benchmark's.
    outbox: { plan: (events, endpoints) => outbox.plan(events, endpoints), dispatch: () => undefined },
    scans: { start: async () => undefined },
    log,
    hostname: "mx.bench.localhost",
    clock: new StoreClock(),
  };
  const rawMessages = createRawMessageStore(db);
  const template = { from: "bench-sender@load.localhost", to: inboxes[0]!.address, bytes: MESSAGE_BYTES };
  const statements = countStatements(db.sql);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const measured = round === ROUNDS - 1;
      // Committed and parsed before the meter starts: what is measured is the store alone.
      const parsed: ParsedRaw[] = [];
      for (let i = 0; i < MESSAGES; i += 64) {
        const group = await Promise.all(
          Array.from({ length: Math.min(64, MESSAGES - i) }, async (_, j) => {
            const inbox = inboxes[(i + j) % inboxes.length]!;
            const header = headerFor({ ...template, to: inbox.address }, inbox.address, `r${round}m${i + j}x${randomBytes(4).toString("hex")}`);
            const received: ReceivedMessage = {
              mailFrom: template.from,
              recipients: [{ address: inbox.address, inboxId: inbox.id }],
              session: { remoteIp: "127.0.0.1", helo: "load.localhost", tls: null },
              raw: Buffer.from(header + bodyFor(template, Buffer.byteLength(header))),
            };
            const rawId = await rawMessages.store(received);
            return (await prepareRaw(deps, rawId, rawRowOf(received)))!;
          }),
        );
        parsed.push(...group);
      }
      await stats.query(`select pg_stat_statements_reset()`);
      await stats.query(`select pg_stat_reset()`);
      statements.reset();
      const backends = withChildren(postmasterPid);
      const meter = startCpuMeter({ postgres: () => backends });
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      for (let i = 0; i < parsed.length; i += BATCH) await storeBatch(deps, parsed.slice(i, i + BATCH));
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      const share = meter.stop();
      if (!measured) continue;
      const stored = Number((await stats.query<{ n: string }>(`select count(*)::text as n from messages`)).rows[0]!.n);
      const top = await stats.query<{ query: string; calls: string; ms: string; plan_ms: string; plans: string; rows: string }>(
        `select query, calls::text, round(total_exec_time::numeric + total_plan_time::numeric, 1)::text as ms,
                round(total_plan_time::numeric, 1)::text as plan_ms, plans::text, rows::text
           from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
          order by total_exec_time + total_plan_time desc`,
      );
      const totalMs = top.rows.reduce((a, r) => a + Number(r.ms), 0);
      const planMs = top.rows.reduce((a, r) => a + Number(r.plan_ms), 0);
      console.log(`store: ${parsed.length} messages of ${MESSAGE_BYTES} bytes in batches of ${BATCH}, ${seconds.toFixed(1)} s, load ${loadAverage()[0].toFixed(2)}`);
      console.log(`  statements per batch ${(statements.count / Math.ceil(parsed.length / BATCH)).toFixed(1)}, per message ${(statements.count / parsed.length).toFixed(2)} (transaction control included)`);
      console.log(`  this process ${((cpu.user + cpu.system) / 1000 / parsed.length).toFixed(3)} ms CPU/message (user ${(cpu.user / 1000 / parsed.length).toFixed(3)})`);
      console.log(`  PostgreSQL ${((share.groups["postgres"]! * seconds * 1000) / parsed.length).toFixed(3)} ms CPU/message; planning + execution ${(totalMs / parsed.length).toFixed(3)} ms/message (planning ${(planMs / parsed.length).toFixed(3)})`);
      console.log(`  messages in the table: ${stored}`);
      console.log(`  statements by share of PostgreSQL time (planning + execution):`);
      for (const r of top.rows.filter((r) => Number(r.ms) > 0)) {
        const text = r.query.replace(/\s+/g, " ").slice(0, 150);
        const share = ((100 * Number(r.ms)) / totalMs).toFixed(1).padStart(5);
        const planning = ((100 * Number(r.plan_ms)) / totalMs).toFixed(1).padStart(5);
        console.log(`  ${share}% (planning ${planning}%, ${r.plans.padStart(5)} plans)  ${r.calls.padStart(5)} calls  ${text}`);
      }
      // The written tables' indexes: each is maintained per row written; idx_scan says whether the store reads it.
      await sleep(STATS_FLUSH_MS);
      const indexes = await stats.query<{ relname: string; indexrelname: string; idx_scan: string; def: string }>(
        `select s.relname, s.indexrelname, s.idx_scan::text, pg_get_indexdef(s.indexrelid) as def
           from pg_stat_user_indexes s where s.relname = any($1) order by s.relname, s.indexrelname`,
        [WRITTEN_TABLES],
      );
      console.log(`  indexes of the written tables (scans during the run):`);
      for (const i of indexes.rows) console.log(`  ${i.idx_scan.padStart(7)}  ${i.def.replace(/^CREATE /, "").slice(0, 140)}`);
      const foreignKeys = await stats.query<{ def: string }>(
        `select conrelid::regclass || ': ' || pg_get_constraintdef(oid) as def from pg_constraint
          where contype = 'f' and conrelid::regclass::text = any($1) order by 1`,
        [WRITTEN_TABLES],
      );
      console.log(`  foreign keys of the written tables (each checked per row written):`);
      for (const f of foreignKeys.rows) console.log(`  ${f.def.slice(0, 150)}`);
    }
  } finally {
    await parser.close();
    await stats.end();
    await db.close();
  }
}

/** Counts the statements sent through the pool and its transactions (BEGIN and COMMIT included). */
function countStatements(sql: SqlPool): { count: number; reset(): void } {
  const counter = {
    count: 0,
    reset() {
      counter.count = 0;
    },
  };
  const query = sql.query.bind(sql);
  const transaction = sql.transaction.bind(sql);
  sql.query = (text, values, options) => {
    counter.count++;
    return query(text, values, options);
  };
  sql.transaction = (fn, options) =>
    transaction((tx) => {
      counter.count += 2;
      return fn({
        query: (text, values, queryOptions) => {
          counter.count++;
          return tx.query(text, values, queryOptions);
        },
      });
    }, options);
  return counter;
}
