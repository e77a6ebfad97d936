// `node_modules/.bin/node --import tsx bench/raw-layout.ts`: what a received message's raw row costs PostgreSQL, by
// layout, on an embedded cluster of its own: groups of BENCH_RAW_GROUP messages of BENCH_RAW_BYTES inserted in one
// prepared multi-row statement as the smtp role's group commit does, then claimed (FOR UPDATE) and deleted in
// batches as the store does, then a VACUUM of both raw tables (what autovacuum does later) — all on one backend,
// whose CPU (/proc/<pid>/stat, 10 ms ticks; by phase too) and the WAL written are counted per message. Layouts, alternated round
// by round: `toast` (the one in use: the whole message in `raw`, EXTERNAL, out of line in ~2 KB TOAST chunks) and
// `segments` (the first 7,000 bytes in the row, the rest in inbound_raw_chunks rows of up to 8,000 bytes, both
// tables at toast_tuple_target 8160 so nothing goes to TOAST: fewer WAL records, more CPU), each also without the
// chunks' foreign key (`-nofk`: no check per chunk row, no cascade per raw row deleted; the chunks deleted by key);
// and `toast-delete-claims`: the claim is the delete itself (DELETE … RETURNING, no FOR UPDATE lock first).
//
// Settings (env): BENCH_RAW_BYTES=10240  BENCH_RAW_MESSAGES=4000  BENCH_RAW_GROUP=30 (≤ 32: prepared in the role too)
//   BENCH_RAW_ROUNDS=3 (per layout, after one unmeasured round of each)
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrateDatabase, openDatabase } from "../src/db/database.js";
import { startEmbeddedPostgres } from "../src/runtime/embedded-postgres.js";
import { loadAverage } from "./machine.js";
import { envNumber } from "./settings.js";

const BYTES = envNumber(process.env, "BENCH_RAW_BYTES", 10 * 1024, 1, 1024 * 1024);
const MESSAGES = envNumber(process.env, "BENCH_RAW_MESSAGES", 4000, 1, 100_000);
const GROUP = envNumber(process.env, "BENCH_RAW_GROUP", 30, 1, 100);
const ROUNDS = envNumber(process.env, "BENCH_RAW_ROUNDS", 3, 1, 20);

/** How a message's bytes are laid out, and whether inbound_raw_chunks keeps its foreign key to the raw row. */
type Layout = "toast" | "toast-nofk" | "toast-delete-claims" | "segments" | "segments-nofk";

const FOREIGN_KEY = "inbound_raw_chunks_raw_message_id_foreign";
/** segments: the bytes the raw row keeps, and those of each chunk row after them (rows that fit a page). */
const ROW_BYTES = 7000;
const SEGMENT_BYTES = 8000;

/** CPU ticks (user + system) of a process. */
function ticks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]);
}
const TICK_MS = 10;

const dir = await mkdtemp(join(tmpdir(), "bench-raw-"));
const postgres = await startEmbeddedPostgres({ dataDir: join(dir, "pg") });
try {
  const db = await openDatabase(postgres.url, { poolMax: 1 });
  await migrateDatabase(db);
  const [{ pid }] = await db.sql.query<{ pid: number }>(`select pg_backend_pid() as pid`);
  const body = Buffer.from(randomBytes(Math.ceil(BYTES * 0.75)).toString("base64")).subarray(0, BYTES);

  /** A round's backend CPU by phase (ms): the inserts, the claims and deletes, the vacuum. */
  interface Phases {
    insert: number;
    delete: number;
    vacuum: number;
  }

  async function round(layout: Layout): Promise<{ phases: Phases; walBytes: number }> {
    // Without the chunks' foreign key: no check per chunk row inserted, no cascade per raw row deleted.
    const noKey = layout.endsWith("-nofk");
    if (noKey) await db.sql.query(`alter table inbound_raw_chunks drop constraint ${FOREIGN_KEY}`);
    // Segments stay in their rows only with the target at a page (the default, ~2 KB, moves any value past it out).
    const target = layout.startsWith("segments") ? "set (toast_tuple_target = 8160)" : "reset (toast_tuple_target)";
    for (const table of ["inbound_raw_messages", "inbound_raw_chunks"]) await db.sql.query(`alter table ${table} ${target}`);
    const walBefore = (await db.sql.query<{ lsn: string }>(`select pg_current_wal_insert_lsn()::text as lsn`))[0]!.lsn;
    const phases: Phases = { insert: 0, delete: 0, vacuum: 0 };
    let mark = ticks(pid);
    const lap = (phase: keyof Phases) => {
      const now = ticks(pid);
      phases[phase] += (now - mark) * TICK_MS;
      mark = now;
    };
    for (let sent = 0; sent < MESSAGES; sent += GROUP) {
      const n = Math.min(GROUP, MESSAGES - sent);
      const ids = Array.from({ length: n }, () => randomUUID());
      const segmented = layout.startsWith("segments");
      const params: unknown[] = [];
      const bind = (value: unknown) => `$${params.push(value)}`;
      const rows = ids.map((id) => {
        const raw = segmented ? body.subarray(0, ROW_BYTES) : body;
        const values = [id, new Date(), "sender@example.org", ["agent@agents.test"], [randomUUID()], "192.0.2.1", "client.example", BYTES, raw];
        return `(${values.map(bind).join(", ")}, 'pending', 0)`;
      });
      const insert = `insert into inbound_raw_messages (id, received_at, mail_from, rcpt_to, inbox_ids, remote_ip, helo, size, raw, status, attempts) values ${rows.join(", ")}`;
      const chunks = segmented
        ? ids.flatMap((id) => {
            const out: string[] = [];
            for (let seq = 0, at = ROW_BYTES; at < BYTES; seq++, at += SEGMENT_BYTES) out.push(`(${bind(id)}::uuid, ${bind(seq)}::int, ${bind(body.subarray(at, at + SEGMENT_BYTES))})`);
            return out;
          })
        : [];
      const text = chunks.length > 0 ? `with raw as (${insert}) insert into inbound_raw_chunks (raw_message_id, seq, data) values ${chunks.join(", ")}` : insert;
      await db.sql.query(text, params, { prepared: true });
      lap("insert");
      // The store's claim and delete, in one transaction; or the delete as the claim (no lock taken first).
      if (layout === "toast-delete-claims") {
        await db.sql.transaction(async (tx) => {
          await tx.query(`delete from inbound_raw_messages where id = any($1::uuid[]) and status = 'pending' returning id`, [ids], { prepared: true });
        });
        lap("delete");
        continue;
      }
      await db.sql.transaction(async (tx) => {
        await tx.query(`select id from inbound_raw_messages where id = any($1::uuid[]) and status = 'pending' for update skip locked`, [ids], { prepared: true });
        if (noKey) await tx.query(`delete from inbound_raw_chunks where raw_message_id = any($1::uuid[])`, [ids], { prepared: true });
        await tx.query(`delete from inbound_raw_messages where id = any($1::uuid[])`, [ids], { prepared: true });
      });
      lap("delete");
    }
    await db.sql.query(`vacuum inbound_raw_messages`);
    await db.sql.query(`vacuum inbound_raw_chunks`);
    lap("vacuum");
    const [{ bytes }] = await db.sql.query<{ bytes: string }>(`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::text as bytes`, [walBefore]);
    if (noKey) {
      await db.sql.query(
        `alter table inbound_raw_chunks add constraint ${FOREIGN_KEY} foreign key (raw_message_id) references inbound_raw_messages (id) on delete cascade`,
      );
    }
    return { phases, walBytes: Number(bytes) };
  }

  // A warm-up of each, unmeasured.
  const layouts = ["toast", "toast-nofk", "toast-delete-claims", "segments", "segments-nofk"] as const;
  for (const layout of layouts) await round(layout);
  console.log(`${MESSAGES} messages of ${BYTES} bytes in groups of ${GROUP}, ${ROUNDS} rounds per layout, load ${loadAverage()[0].toFixed(2)}`);
  for (let r = 0; r < ROUNDS; r++) {
    for (const layout of layouts) {
      const { phases, walBytes } = await round(layout);
      const perMessage = (ms: number) => ((ms * 1000) / MESSAGES).toFixed(1);
      console.log(
        `  ${layout.padEnd(19)} PostgreSQL ${perMessage(phases.insert + phases.delete + phases.vacuum)} µs CPU ` +
          `(insert ${perMessage(phases.insert)}, claim and delete ${perMessage(phases.delete)}, vacuum ${perMessage(phases.vacuum)}), ` +
          `${(walBytes / MESSAGES).toFixed(0)} B WAL per message (load ${loadAverage()[0].toFixed(2)})`,
      );
    }
  }
  await db.close();
} finally {
  await postgres.stop();
  await rm(dir, { recursive: true, force: true });
}
