// The database handle: the ORM and the one way to get an EntityManager (a fork per unit of work).
import { Migrator } from "@mikro-orm/migrations";
import { MikroORM, type EntityManager } from "@mikro-orm/postgresql";
import { fileURLToPath } from "node:url";
import { entities } from "./entities/index.js";
import { migrations } from "./migrations/index.js";

export interface Database {
  readonly orm: MikroORM;
  /** A fresh EntityManager for one unit of work (an RPC call, an activity, an SMTP transaction). */
  fork(): EntityManager;
  /** Raw SQL on the pool, for hot paths where entity hydration costs more than the query (key lookup, counters). */
  query<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

export async function openDatabase(url: string, options: { poolMax?: number } = {}): Promise<Database> {
  const orm = await MikroORM.init({
    clientUrl: url,
    entities,
    extensions: [Migrator],
    migrations: {
      path: MIGRATIONS_DIR,
      pathTs: MIGRATIONS_DIR,
      migrationsList: migrations,
      // The snapshot is written by `mailbox migrate create` only, never by a running server.
      snapshotOnMigrate: false,
      silent: true,
    },
    pool: { min: 0, max: options.poolMax ?? 20 },
    debug: false,
    allowGlobalContext: false,
  });
  return {
    orm,
    fork: () => orm.em.fork(),
    query: (sql, params = []) => orm.em.getConnection().execute(sql, [...params], "all"),
    close: () => orm.close(),
  };
}

/** Applies every committed migration not applied yet (run once per deployment, e.g. `mailbox migrate`). */
export async function migrateDatabase(db: Database): Promise<void> {
  await db.orm.migrator.up();
}
