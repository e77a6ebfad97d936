// A database of one test file's own, on the run's PostgreSQL: for files whose processes scan the whole database
// (a worker role's reconcilers, an smtp role's sweeper) or spawn workers of their own, so that they never see, start
// or adopt another file's submissions and raw mail, and no other file's processes see theirs.
//
// The global setup migrates a template once (prepareFileDatabaseTemplate); each file's database is a copy of it
// (CREATE DATABASE … TEMPLATE, a fraction of a second) and is dropped when the file ends.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { migrateDatabase, openDatabase } from "../../src/db/database.js";

export interface FileDatabase {
  /** The run's DATABASE_URL with this file's database in its path. */
  readonly url: string;
  /** Drops the database, ending any connection still open to it. */
  drop(): Promise<void>;
}

const TEMPLATE_SUFFIX = "_file_template";

/** Creates the migrated template on the run's PostgreSQL; returns its name. No connection to it stays open. */
export async function prepareFileDatabaseTemplate(databaseUrl: string): Promise<string> {
  const template = `${databaseName(databaseUrl)}${TEMPLATE_SUFFIX}`;
  await admin(databaseUrl, async (client) => {
    await client.query(`drop database if exists "${template}" with (force)`);
    await client.query(`create database "${template}"`);
  });
  const db = await openDatabase(withDatabase(databaseUrl, template), { poolMax: 1 });
  try {
    await migrateDatabase(db);
  } finally {
    await db.close();
  }
  return template;
}

/** Drops the template (at the end of the run). */
export async function dropFileDatabaseTemplate(databaseUrl: string, template: string): Promise<void> {
  await admin(databaseUrl, (client) => client.query(`drop database if exists "${template}" with (force)`));
}

/** A fresh, migrated database of this file's own on the run's PostgreSQL. */
export async function createFileDatabase(): Promise<FileDatabase> {
  const runUrl = inject("databaseUrl");
  const template = inject("fileDatabaseTemplate");
  const name = `${databaseName(runUrl)}_file_${randomBytes(5).toString("hex")}`;
  await admin(runUrl, (client) => client.query(`create database "${name}" template "${template}"`));
  return {
    url: withDatabase(runUrl, name),
    drop: () => admin(runUrl, (client) => client.query(`drop database if exists "${name}" with (force)`)).then(() => undefined),
  };
}

/** Runs `work` on a connection of its own to the run's database (CREATE DATABASE refuses a transaction, as a pool may hold). */
async function admin<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(name)}`;
  return u.toString();
}
