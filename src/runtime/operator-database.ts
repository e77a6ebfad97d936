// The database of operator commands (`mailbox migrate`, `mailbox admin …`), opened without loading the service.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "../config.js";
import { migrateDatabase, openDatabase, type Database } from "../db/database.js";
import { startEmbeddedPostgres } from "./embedded-postgres.js";
import { isRunning, type ProcessIdentity } from "./watchdog.js";

/** Written while `mailbox start` runs, so operator commands reach the same embedded database. */
export const RUNTIME_FILE = "runtime.json";

export interface OperatorDatabase {
  readonly db: Database;
  close(): Promise<void>;
}

/**
 * A database for operator commands: DATABASE_URL, else the embedded one of a running `mailbox start`, else the
 * embedded one started just for this command.
 */
export async function openOperatorDatabase(config: Config): Promise<OperatorDatabase> {
  let url = config.databaseUrl;
  let stopPg: (() => Promise<void>) | undefined;
  if (!url) {
    url = await runningDatabaseUrl(config);
    if (!url) {
      const pg = await startEmbeddedPostgres({ dataDir: config.dataDir });
      url = pg.url;
      stopPg = pg.stop;
    }
  }
  const db = await openDatabase(url, { poolMax: 2, ssl: config.database });
  await migrateDatabase(db);
  return {
    db,
    close: async () => {
      await db.close();
      await stopPg?.();
    },
  };
}

async function runningDatabaseUrl(config: Config): Promise<string | undefined> {
  try {
    const runtime = JSON.parse(await readFile(join(config.dataDir, RUNTIME_FILE), "utf8")) as ProcessIdentity & { databaseUrl: string };
    // The file of a killed run stays behind; its pid may belong to another process by now.
    return isRunning(runtime) ? runtime.databaseUrl : undefined;
  } catch {
    return undefined;
  }
}
