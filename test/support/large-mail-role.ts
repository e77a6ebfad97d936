// What the tests of memory under large mail share: an app on a database of its own (the smtp role's sweeper adopts
// pending raw mail of its whole database, and other files' would adopt these 9 MB messages), an inbox, the smtp role
// as its own process (`mailbox serve --role smtp`), 9 MB messages for it, a warm-up through the whole path, and how
// many of a set of messages are stored. One such file at a time in a run: each load takes a core for minutes, and
// two side by side would each measure the other's load as much as its own.
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readProcessCpu } from "./cpu-usage.js";
import { createFileDatabase } from "./file-database.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "./harness.js";
import { RawSmtpClient, transaction } from "./smtp-client.js";
import { serveSmtp, type SmtpProcess } from "./smtp-process.js";
import { holdLock } from "./tools.js";

export const LARGE_MAIL_SENDER = "large@example.org";
/** The application_name of the role's PostgreSQL connections (PGAPPNAME): the file's database has no other role. */
export const LARGE_MAIL_APPLICATION_NAME = "mailbox-smtp-under-test";

/** A 9 MB body: a short text part and a base64 attachment of random (incompressible) bytes in 76-character lines. */
export const NINE_MB_BODY = (() => {
  const base64 = randomBytes(6_750_000).toString("base64").replace(/.{76}/g, "$&\r\n");
  return Buffer.from(
    `Content-Type: multipart/mixed; boundary=large\r\n\r\n--large\r\nContent-Type: text/plain\r\n\r\nsee the attachment\r\n` +
      `--large\r\nContent-Type: application/octet-stream; name=blob.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64}\r\n--large--\r\n`,
  );
})();

export interface LargeMailRole {
  readonly app: TestApp;
  readonly smtp: SmtpProcess;
  readonly inbox: { readonly id: string; readonly address: string };
  /** The header section of a message to the inbox (the body, NINE_MB_BODY or another, follows it). */
  header(messageId: string): Buffer;
  /** One small message through the whole path, stored: threads and pools exist before anything is measured. */
  warm(): Promise<void>;
  /** How many messages of these Message-IDs the inbox holds, and how many distinct. */
  storedOf(messageIds: readonly string[]): Promise<{ rows: number; distinct: number }>;
  stop(): Promise<void>;
}

/** CPU time (user and system) a live process or thread has used, in seconds; 0 when it is gone. */
async function cpuSeconds(statPath: string): Promise<number> {
  const stat = await readFile(statPath, "utf8").catch(() => "");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields.length > 12 ? (Number(fields[11]) + Number(fields[12])) / 100 : 0; // utime, stime in USER_HZ ticks
}

/**
 * The role's CPU by thread name (mail-parser, the processing thread's WorkerThread, the main thread, libuv's pool…),
 * live threads only: what ended threads (a recycled parser worker) used is the total minus their sum.
 */
async function threadCpu(pid: number): Promise<Map<string, number>> {
  const byName = new Map<string, number>();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const name = (await readFile(`/proc/${pid}/task/${tid}/comm`, "utf8").catch(() => "?")).trim();
    byName.set(name, (byName.get(name) ?? 0) + (await cpuSeconds(`/proc/${pid}/task/${tid}/stat`)));
  }
  return byName;
}

/** CPU-seconds of each PostgreSQL backend of the file's database now (but the asking one). */
async function backendCpu(app: TestApp): Promise<Map<number, number>> {
  const rows = await app.db.sql.query<{ pid: number }>(
    `select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
  );
  return new Map(rows.map((r) => [r.pid, readProcessCpu(r.pid)?.ownSeconds ?? 0]));
}

/**
 * The lock of the run's memory loads: test files run in worker processes of the run's vitest process, their common
 * parent. A file waits at most this long for another's load to end.
 */
const LOAD_LOCK = join(tmpdir(), `mailbox-memory-load-${process.ppid}.lock`);
const LOAD_LOCK_WAIT_MS = 30 * 60_000;
/** The timeout of a hook that starts one: the wait for the lock, then the start. */
export const LARGE_MAIL_START_TIMEOUT_MS = LOAD_LOCK_WAIT_MS + 180_000;

/** Starts the service of one memory file, once no other file of the run holds it (until `stop`). */
export async function startLargeMailRole(env: Readonly<Record<string, string>> = {}): Promise<LargeMailRole> {
  const release = await holdLock(LOAD_LOCK, LOAD_LOCK_WAIT_MS);
  try {
    return await startHeld(env, release);
  } catch (e) {
    await release();
    throw e;
  }
}

async function startHeld(env: Readonly<Record<string, string>>, release: () => Promise<void>): Promise<LargeMailRole> {
  const database = await createFileDatabase();
  const app = await startTestApp({ DATABASE_URL: database.url });
  const dataDir = await mkdtemp(join(tmpdir(), "mailbox-large-mail-"));
  const tenant = await app.createTenant();
  const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("large"), displayName: "Large" } })).body;
  // LARGE_MAIL_CPU_PROFILE=<dir>: the role writes a V8 CPU profile per thread there (read with bench/cpu-profile.ts),
  // and is stopped with SIGTERM so that it can.
  const profileDir = process.env.LARGE_MAIL_CPU_PROFILE;
  // Every connection of the role names itself, so that its PostgreSQL backends are found by one query.
  const roleEnv = { PGAPPNAME: LARGE_MAIL_APPLICATION_NAME, ...env };
  const smtp = await serveSmtp(app, dataDir, profileDir ? { ...roleEnv, NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : roleEnv);
  const header = (messageId: string) =>
    Buffer.from(`From: ${LARGE_MAIL_SENDER}\r\nTo: ${inbox.address}\r\nSubject: large\r\nMessage-ID: ${messageId}\r\nMIME-Version: 1.0\r\n`);
  const storedOf = async (messageIds: readonly string[]) => {
    const [counts] = await app.db.sql.query<{ rows: number; distinct: number }>(
      `select count(*)::int as rows, count(distinct internet_message_id)::int as distinct from messages
        where inbox_id = $1 and internet_message_id = any($2)`,
      [inbox.id, messageIds],
    );
    return counts!;
  };
  let atWarm: { total: number; role: Map<string, number>; backends: Map<number, number>; own: Map<string, number> } | null = null;
  return {
    app,
    smtp,
    inbox,
    header,
    storedOf,
    async warm() {
      const warm = `<${uniqueName("warm")}@large.example>`;
      const { client } = await RawSmtpClient.connect(smtp.port);
      await client.command("EHLO warm.example");
      await transaction(client, { from: LARGE_MAIL_SENDER, to: [inbox.address], data: [header(warm), Buffer.from("\r\nwarm\r\n")] });
      await client.quit();
      await eventually(async () => ((await storedOf([warm])).rows === 1 ? true : undefined), 60_000);
      atWarm = {
        total: await cpuSeconds(`/proc/${smtp.child.pid!}/stat`),
        role: await threadCpu(smtp.child.pid!),
        backends: await backendCpu(app),
        own: await threadCpu(process.pid),
      };
    },
    async stop() {
      // What the file's load cost, for the run's log: the role's CPU and this test process's.
      const role = await cpuSeconds(`/proc/${smtp.child.pid!}/stat`);
      const own = process.cpuUsage();
      console.log(`large-mail load CPU: smtp role ${role.toFixed(1)} s, test process ${((own.user + own.system) / 1e6).toFixed(1)} s`);
      if (atWarm) {
        // From the warm-up's end on (the load alone): by thread of the role, and the database's live backends.
        const threads = await threadCpu(smtp.child.pid!);
        const backends = await backendCpu(app);
        const since = (now: Map<string | number, number>, before: Map<string | number, number>) =>
          [...now].reduce((sum, [key, seconds]) => sum + seconds - (before.get(key) ?? 0), 0);
        const byThread = (now: Map<string, number>, before: Map<string, number>) =>
          [...now]
            .map(([name, seconds]) => [name, seconds - (before.get(name) ?? 0)] as const)
            .filter(([, seconds]) => seconds >= 0.05)
            .sort((a, b) => b[1] - a[1])
            .map(([name, seconds]) => `${name} ${seconds.toFixed(1)}`)
            .join(", ");
        const ended = role - atWarm.total - since(threads, atWarm.role);
        // This process's own threads too (the clients' sockets, the sampler's reads): other files this worker ran
        // before are not in it.
        const own = await threadCpu(process.pid);
        console.log(
          `large-mail load CPU after warm-up: smtp role ${(role - atWarm.total).toFixed(1)} s; by thread ${byThread(threads, atWarm.role)}, ended threads ${ended.toFixed(1)}; ` +
            `PostgreSQL backends ${since(backends, atWarm.backends).toFixed(1)} s; test process ${since(own, atWarm.own).toFixed(1)} s (${byThread(own, atWarm.own)})`,
        );
      }
      await smtp.kill(profileDir ? "SIGTERM" : "SIGKILL");
      await app.stop();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
      await release();
    },
  };
}
