// The database handle: the ORM and the one way to get an EntityManager (a fork per unit of work).
import { Migrator } from "@mikro-orm/migrations";
import { pgConnectionOf, type DatabaseTls, type PgConnection } from "./tls.js";
import { MikroORM, type EntityManager } from "@mikro-orm/postgresql";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { entities } from "./entities/index.js";
import { migrations } from "./migrations/index.js";

export interface Database {
  readonly orm: MikroORM;
  /** A fresh EntityManager for one unit of work (an RPC call, an activity, an SMTP transaction). */
  fork(): EntityManager;
  /** Raw SQL through the ORM's pool (`?` placeholders, inlined by MikroORM), for set-based statements. */
  query<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /**
   * Hot paths (SMTP receive and admission, key lookup, counters): SQL with `$n` parameters bound by the driver,
   * Buffers sent as binary. MikroORM inlines parameters into the statement text, so a 10 KB message would travel
   * as 20 KB of hex and be parsed by the server; measured, the ORM path cost 4× the CPU of this one.
   */
  readonly sql: SqlPool;
  /** Connections of the two pools now: `sql` (the hot paths') and `orm` (MikroORM's). */
  poolUse(): Promise<Readonly<Record<"sql" | "orm", PoolUse>>>;
  close(): Promise<void>;
}

/** A pool's connections: open (busy and idle), idle, and callers waiting for one. */
export interface PoolUse {
  readonly open: number;
  readonly idle: number;
  readonly waiting: number;
}

const useOf = (pool: pg.Pool): PoolUse => ({ open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });

/** One connection inside a transaction of SqlPool.transaction. */
export interface SqlTx {
  query<T>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<T[]>;
}

export interface QueryOptions {
  /**
   * Sent as a named prepared statement, kept by each connection for its life: PostgreSQL parses it once per
   * connection and may plan it once. Only for a statement whose text is one of a few (a hot path's fixed text, its
   * values bound as arrays): every distinct text stays prepared on every connection that ran it.
   */
  readonly prepared?: boolean;
}

export interface TransactionOptions {
  /**
   * Prepared statements run with their generic plan, planned once per connection (plan_cache_mode
   * force_generic_plan, set in the BEGIN's round trip). Without it PostgreSQL plans a statement whose array values
   * are short afresh at every call, as such a custom plan looks cheaper than the generic one. For transactions whose
   * statements find their rows by key whatever their values.
   */
  readonly genericPlans?: boolean;
}

/** A prepared statement's name: its text's digest, so one name never stands for two texts on a connection. */
function statementName(text: string): string {
  return `p${createHash("sha1").update(text).digest("base64url")}`;
}

export interface SqlPool extends SqlTx {
  /** Runs fn in one transaction on one connection (BEGIN … COMMIT, ROLLBACK on a throw). */
  transaction<R>(fn: (tx: SqlTx) => Promise<R>, options?: TransactionOptions): Promise<R>;
  /** LISTENs on a channel on a connection of its own, reconnecting after a loss until closed. */
  listen(channel: string, handlers: ListenHandlers): Listener;
}

export interface ListenHandlers {
  /** A notification arrived. */
  notified(payload: string): void;
  /** Listening (again): notifications sent while it was not were missed. */
  listening(): void;
  /** The connection is lost; listening resumes by itself. */
  lost(): void;
}

export interface Listener {
  close(): Promise<void>;
}

/** Waits between attempts to listen again after a lost connection. */
const RELISTEN_MS = [100, 500, 1000, 2000, 5000];

const ignoreError = (): void => undefined;

/**
 * How long a pooled connection may sit idle before it is closed. A new connection costs PostgreSQL ~9 ms of CPU and
 * the client ~5 (SCRAM, backend start; 100 connections to the embedded cluster) and its prepared statements are
 * parsed and planned again: with the driver's 10 s, the smtp role's pools closed and reopened ~25 connections in a
 * 6,000-message round of bench:inbound-cpu (a connection a burst needed, idle until the next). The pool's size still
 * bounds what is held.
 */
const IDLE_CONNECTION_MS = 60_000;

function createSqlPool({ url, ssl }: PgConnection, max: number): SqlPool & { use(): PoolUse; end(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: url, ssl, max, idleTimeoutMillis: IDLE_CONNECTION_MS });
  // An idle client's error (the server restarted) must not crash the process; the next query reconnects.
  pool.on("error", () => undefined);
  const run = async <T>(client: pg.Pool | pg.PoolClient, text: string, values: readonly unknown[] = [], options?: QueryOptions) =>
    (await client.query({ text, values: [...values], ...(options?.prepared ? { name: statementName(text) } : {}) })).rows as T[];
  return {
    query: (text, values, options) => run(pool, text, values, options),
    async transaction(fn, options) {
      const client = await pool.connect();
      // A checked-out client has no listener of the pool's: a connection cut meanwhile (PostgreSQL restarted) would
      // emit an unhandled 'error' and end the process. The transaction's next statement fails instead.
      client.on("error", ignoreError);
      try {
        await client.query(options?.genericPlans ? "begin; set local plan_cache_mode = force_generic_plan" : "begin");
        const result = await fn({ query: (text, values, options) => run(client, text, values, options) });
        await client.query("commit");
        return result;
      } catch (e) {
        await client.query("rollback").catch(() => undefined);
        throw e;
      } finally {
        client.off("error", ignoreError);
        client.release();
      }
    },
    listen: (channel, handlers) => listenOn({ url, ssl }, channel, handlers),
    use: () => useOf(pool),
    end: () => pool.end(),
  };
}

function listenOn({ url, ssl }: PgConnection, channel: string, handlers: ListenHandlers): Listener {
  let closed = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | undefined;
  let failures = 0;

  function again(): void {
    if (closed) return;
    retry = setTimeout(connect, RELISTEN_MS[Math.min(failures++, RELISTEN_MS.length - 1)]);
    retry.unref();
  }
  function connect(): void {
    const c = new pg.Client({ connectionString: url, ssl });
    client = c;
    let gone = false;
    const lose = () => {
      if (gone) return;
      gone = true;
      if (client === c) client = null;
      void c.end().catch(() => undefined);
      if (closed) return;
      handlers.lost();
      again();
    };
    c.on("error", lose);
    c.on("end", lose);
    c.on("notification", (n) => handlers.notified(n.payload ?? ""));
    c.connect()
      .then(() => c.query(`listen ${pg.escapeIdentifier(channel)}`))
      .then(() => {
        if (gone || closed) return;
        failures = 0;
        handlers.listening();
      })
      .catch(lose);
  }
  connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}

export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

/** `poolMax` connections for each of the two pools (the ORM's and the plain-SQL one); `ssl` per DATABASE_SSL_*. */
export async function openDatabase(url: string, options: { poolMax?: number; ssl?: DatabaseTls } = {}): Promise<Database> {
  const connection = await pgConnectionOf(url, options.ssl);
  const orm = await MikroORM.init({
    clientUrl: connection.url,
    driverOptions: { ssl: connection.ssl },
    entities,
    extensions: [Migrator],
    migrations: {
      path: MIGRATIONS_DIR,
      pathTs: MIGRATIONS_DIR,
      migrationsList: migrations,
      // No schema snapshot: `mailbox migrate create` diffs the entities against the database migrated to the latest
      // committed migration, so a hand-written migration can never leave a stale snapshot behind.
      snapshot: false,
      snapshotOnMigrate: false,
      silent: true,
    },
    pool: { min: 0, max: options.poolMax ?? 20 },
    debug: false,
    allowGlobalContext: false,
  });
  const sql = createSqlPool(connection, options.poolMax ?? 20);
  return {
    orm,
    fork: () => orm.em.fork(),
    query: (text, params = []) => orm.em.getConnection().execute(text, [...params], "all"),
    sql,
    poolUse: async () => ({ sql: sql.use(), orm: useOf(await orm.em.getConnection().getNativeClient()) }),
    close: async () => {
      await sql.end();
      await orm.close();
    },
  };
}

/** Applies every committed migration not applied yet (run once per deployment, e.g. `mailbox migrate`). */
export async function migrateDatabase(db: Database): Promise<void> {
  await db.orm.migrator.up();
}
