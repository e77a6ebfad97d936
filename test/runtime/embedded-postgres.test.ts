import { execFileSync, spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../../src/runtime/embedded-postgres.js";

const isRoot = process.getuid?.() === 0;

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

function postgresUserIds(): { uid: number; gid: number } {
  const id = (flag: string): number => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }));
  return { uid: id("-u"), gid: id("-g") };
}

describe("startEmbeddedPostgres", () => {
  let dir: string;
  const cleanups: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "mailbox-pg-"));
    // Run by root, postgres runs as the postgres user, which must be able to enter the directory.
    await chmod(dir, 0o755);
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it("initialises a cluster, serves the mailbox database and keeps data across restarts, with settings added to its durable defaults", { timeout: 60_000 }, async () => {
    const first = await startEmbeddedPostgres({ dataDir: dir });
    expect(first.url).toMatch(/^postgres:\/\/[^:]+:[^@]+@127\.0\.0\.1:\d+\/mailbox$/);
    expect(await query(first.url, "select 1 as one")).toEqual([{ one: 1 }]);
    expect(await query(first.url, "show server_encoding")).toEqual([{ server_encoding: "UTF8" }]);
    expect(await query(first.url, "show fsync")).toEqual([{ fsync: "on" }]);
    expect(
      await query(first.url, "select current_setting('shared_buffers') as buffers, current_setting('max_wal_size') as wal, current_setting('autovacuum_naptime') as naptime"),
    ).toEqual([{ buffers: "128MB", wal: "4GB", naptime: "10s" }]);
    await query(first.url, "create table kept (v text); insert into kept values ('still here')");
    await first.stop();

    // The test run's own cluster is started so (test/support/global-setup.ts).
    const second = await startEmbeddedPostgres({ dataDir: dir, settings: ["fsync=off", "wal_init_zero=off"] });
    cleanups.push(() => second.stop());
    expect(await query(second.url, "select v from kept")).toEqual([{ v: "still here" }]);
    expect(await query(second.url, "select current_setting('fsync') as fsync, current_setting('wal_init_zero') as zero")).toEqual([{ fsync: "off", zero: "off" }]);
  });

  it("starts over a postmaster.pid left by a killed server whose pid was reused", { timeout: 60_000 }, async () => {
    const first = await startEmbeddedPostgres({ dataDir: dir });
    await first.stop();
    // A live process that is not postgres holds the recorded pid, as after a reboot. It runs as the user
    // postgres runs as: postgres itself ignores a pid it may not signal.
    const impostor = spawn("sleep", ["60"], isRoot ? postgresUserIds() : {});
    cleanups.push(async () => void impostor.kill());
    await writeFile(join(dir, "postgres", "postmaster.pid"), `${impostor.pid}\n${join(dir, "postgres")}\n`);

    const second = await startEmbeddedPostgres({ dataDir: dir });
    cleanups.push(() => second.stop());
    expect(await query(second.url, "select 1 as one")).toEqual([{ one: 1 }]);
  });

  it("refuses a second server on the same cluster", { timeout: 60_000 }, async () => {
    const running = await startEmbeddedPostgres({ dataDir: dir });
    cleanups.push(() => running.stop());
    await expect(startEmbeddedPostgres({ dataDir: dir })).rejects.toThrow(/already running/);
  });

  it.runIf(isRoot)("lets the postgres user through a directory only root could enter (a mktemp -d checkout), search bit only", { timeout: 60_000 }, async () => {
    const hidden = join(dir, "private");
    await mkdir(hidden, { mode: 0o700 });
    const started = await startEmbeddedPostgres({ dataDir: join(hidden, "data") });
    cleanups.push(() => started.stop());
    expect(await query(started.url, "select 1 as one")).toEqual([{ one: 1 }]);
    expect((await stat(hidden)).mode & 0o777).toBe(0o701);
  });
});
