// Our side of the inbound benchmark: the embedded stack (PostgreSQL and Temporal as bench/stack.ts starts them),
// one organization with inboxes and one webhook endpoint at the bench's receiver, and the api, worker and smtp
// roles each in its own process (`mailbox serve --role …`), so none shares an event loop with another or with
// the load generator. A second organization without a webhook endpoint lets the commit count be split.
import { spawn, fork } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import type { Config } from "../src/config.js";
import type { ReceiverCommand, ReceiverTake } from "./inbound-receiver.js";
import { pidByCommandLine } from "./processes.js";
import { seed } from "./seed.js";
import { startInfrastructure, stopChild, type Infrastructure, type Teardown, roleEnv as baseRoleEnv } from "./stack.js";

export interface RoleProcess {
  readonly role: string;
  readonly pid: number;
  /** The JSON line `mailbox serve` prints once it listens. */
  readonly summary: { readonly api: string | null; readonly smtp: string | null };
  readonly logFile: string;
  /** Stops it (SIGTERM, then SIGKILL after a while). */
  readonly stop: () => Promise<void>;
}

const START_TIMEOUT_MS = 90_000;

/** `mailbox serve --role <role>`, its stderr (JSON log lines) into `<dir>/<role>.log`. */
export async function startRole(
  role: "api" | "worker" | "smtp",
  env: Readonly<Record<string, string>>,
  dir: string,
  teardown: Teardown,
  nodeArgs: readonly string[] = [],
  stdoutFile?: string,
): Promise<RoleProcess> {
  const logFile = join(dir, `${role}.log`);
  const child = spawn(process.execPath, [...nodeArgs, "src/cli/mailbox.js", "serve", "--role", role], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Appended to: a role started again in the same directory keeps its predecessor's lines.
  child.stderr!.pipe(createWriteStream(logFile, { flags: "a" }));
  // What V8's tracing options (--trace-gc …) print goes to stdout, before and after the summary line.
  if (stdoutFile) child.stdout!.pipe(createWriteStream(stdoutFile, { flags: "a" }));
  teardown.add(() => stopChild(child));
  const summary = await new Promise<RoleProcess["summary"]>((resolveSummary, reject) => {
    const timer = setTimeout(() => reject(new Error(`${role} did not start within ${START_TIMEOUT_MS / 1000} s (see ${logFile})`)), START_TIMEOUT_MS);
    child.once("exit", (code) => reject(new Error(`${role} exited with code ${code} before listening (see ${logFile})`)));
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", function summaryLine(line) {
      // V8's trace lines begin "[<pid>:<isolate>": not the summary.
      if (stdoutFile && line.startsWith("[")) return;
      lines.off("line", summaryLine);
      clearTimeout(timer);
      try {
        resolveSummary(JSON.parse(line) as RoleProcess["summary"]);
      } catch {
        reject(new Error(`${role} printed an unexpected first line: ${line}`));
      }
    });
  });
  // A role that dies by itself (not kill -9 or the teardown's stop) says so with the end of its log, which is
  // otherwise gone with the run's directory: a load run or test then fails with the cause beside it.
  child.once("exit", (code, signal) => {
    if (signal === "SIGKILL" || signal === "SIGTERM" || code === 0) return;
    let tail = "";
    try {
      tail = readFileSync(logFile, "utf8").split("\n").slice(-30).join("\n");
    } catch {
      // no log
    }
    process.stderr.write(`${role} role (pid ${child.pid}) exited by itself (${signal ?? `code ${code}`}); the end of its log:\n${tail}\n`);
  });
  return { role, pid: child.pid!, summary, logFile, stop: () => stopChild(child) };
}


/** What our roles logged during a run (LOG_LEVEL error unless set): how many lines, and the last few of each. */
export function roleLogs(roles: readonly RoleProcess[], tailLines = 5): { lines: Record<string, number>; tail: Record<string, string[]> } {
  const logged = roles.map((r) => [r.role, readFileSync(r.logFile, "utf8").split("\n").filter((l) => l.trim() !== "")] as const);
  return {
    lines: Object.fromEntries(logged.map(([role, lines]) => [role, lines.length])),
    tail: Object.fromEntries(logged.map(([role, lines]) => [role, lines.slice(-tailLines)])),
  };
}

export interface Receiver {
  readonly host: string;
  readonly pid: number;
  setFailRatio(ratio: number): void;
  /** Every record since the last take, and the counters; the receiver starts afresh. */
  take(): Promise<ReceiverTake>;
}

export async function startReceiver(teardown: Teardown): Promise<Receiver> {
  const child = fork(resolve("bench/inbound-receiver.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  teardown.add(() => stopChild(child));
  const host = await new Promise<string>((resolveHost, reject) => {
    child.once("exit", (code) => reject(new Error(`the webhook receiver exited with code ${code}`)));
    child.once("message", (m: { ready?: string }) => (m.ready ? resolveHost(m.ready) : reject(new Error("unexpected receiver message"))));
  });
  const send = (command: ReceiverCommand) => child.send(command);
  return {
    host,
    pid: child.pid!,
    setFailRatio: (ratio) => send({ cmd: "fail", ratio }),
    take: () =>
      new Promise((resolveTake) => {
        const onMessage = (m: { taken?: ReceiverTake }) => {
          if (!m.taken) return;
          child.off("message", onMessage);
          resolveTake(m.taken);
        };
        child.on("message", onMessage);
        send({ cmd: "take" });
      }),
  };
}

export interface OurStack {
  readonly infra: Infrastructure;
  readonly receiver: Receiver;
  /** The smtp role now (restartSmtp replaces it, and its port). */
  readonly smtp: RoleProcess;
  readonly api: RoleProcess;
  readonly worker: RoleProcess;
  readonly smtpPort: number;
  readonly temporalPid: number | undefined;
  /** Inbox addresses of the organization with the webhook endpoint, and of the one without. */
  readonly withWebhook: readonly string[];
  readonly withoutWebhook: readonly string[];
  readonly webhookUrl: string;
  readonly stats: PgStats;
  readonly roleEnv: Readonly<Record<string, string>>;
  /** Stops the smtp role and starts it again with `env` over the stack's (and its first start's) environment. */
  restartSmtp(env: Readonly<Record<string, string>>): Promise<void>;
}

export interface OurStackOptions {
  readonly workDir: string;
  readonly config: Config;
  readonly inboxes: number;
  /** SMTP_MAX_CONNECTIONS of the smtp role: room for the idle-session measurement. */
  readonly maxConnections: number;
  readonly webhookRetryInitialMs: number;
  readonly log: (line: string) => void;
  /** Node options of the smtp role (e.g. --cpu-prof). */
  readonly smtpNodeArgs?: readonly string[];
  /** Environment of the smtp role only, over the roles' (e.g. INBOUND_INFLOW_DELAY). */
  readonly smtpEnv?: Readonly<Record<string, string>>;
  /** A file the smtp role's stdout is appended to (what V8's tracing options print), its summary line skipped. */
  readonly smtpStdout?: string;
}

export async function startOurStack(options: OurStackOptions, teardown: Teardown): Promise<OurStack> {
  const { workDir, config, log } = options;
  log("starting PostgreSQL and Temporal …");
  const infra = await startInfrastructure(workDir, teardown);
  log(`seeding 2 organizations × ${options.inboxes} inboxes …`);
  const keys = await seed(infra.databaseUrl, {
    organizations: 2,
    inboxesPerOrganization: options.inboxes,
    managedDomain: config.managedDomain,
    defaults: config.defaults,
  });
  const receiver = await startReceiver(teardown);
  const roleEnv: Record<string, string> = {
    ...baseRoleEnv(infra),
    SMTP_MAX_CONNECTIONS: String(options.maxConnections),
    // Every load generator connects from 127.0.0.1.
    SMTP_MAX_CONNECTIONS_PER_CLIENT: String(options.maxConnections),
    WEBHOOK_ALLOW_HOSTS: receiver.host,
    NODE_EXTRA_CA_CERTS: resolve("test/fixtures/webhook-tls/ca.pem"),
    WEBHOOK_RETRY_INITIAL_MS: String(options.webhookRetryInitialMs),
    WEBHOOK_RETRY_MAX_MS: String(Math.max(options.webhookRetryInitialMs, 10 * options.webhookRetryInitialMs)),
  };
  log("starting the api, worker and smtp roles …");
  const startSmtp = (env: Readonly<Record<string, string>>) =>
    startRole("smtp", { ...roleEnv, ...options.smtpEnv, ...env, DATA_DIR: join(workDir, "smtp") }, workDir, teardown, options.smtpNodeArgs, options.smtpStdout);
  const [api, worker, first] = await Promise.all([
    ...(["api", "worker"] as const).map((role) => startRole(role, { ...roleEnv, DATA_DIR: join(workDir, role) }, workDir, teardown)),
    startSmtp({}),
  ]);
  let smtp = first!;
  const portOf = (role: RoleProcess) => Number(role.summary.smtp!.split(":").pop());

  const client = new pg.Client({ connectionString: infra.databaseUrl });
  await client.connect();
  teardown.add(() => client.end());
  const { rows } = await client.query<{ name: string; addresses: string[] }>(
    `select o.name, array_agg(i.address order by i.address) as addresses
     from organizations o join inboxes i on i.organization_id = o.id group by o.name order by o.name`,
  );
  // Organizations are named <tag>-1 and <tag>-2; the first key is the first organization's.
  const webhookUrl = `https://${receiver.host}/hook`;
  const res = await fetch(`${api!.summary.api}/v1/webhooks`, {
    method: "POST",
    headers: { "x-api-key": keys[0]!, "idempotency-key": "inbound-bench", "content-type": "application/json" },
    body: JSON.stringify({ url: webhookUrl, events: ["message.received"] }),
  });
  if (res.status !== 201) throw new Error(`creating the webhook endpoint: ${res.status} ${await res.text()}`);
  return {
    infra,
    receiver,
    get smtp() {
      return smtp;
    },
    api: api!,
    worker: worker!,
    get smtpPort() {
      return portOf(smtp);
    },
    temporalPid: pidByCommandLine(["start-dev", infra.temporalAddress.split(":").pop()!]),
    withWebhook: rows[0]!.addresses,
    withoutWebhook: rows[1]!.addresses,
    webhookUrl,
    stats: new PgStats(client),
    roleEnv,
    async restartSmtp(env) {
      await smtp.stop();
      smtp = await startSmtp(env);
    },
  };
}

export interface PgCounters {
  readonly at: number;
  /** pg_stat_database.xact_commit of the mailbox database: every committed transaction, read-only ones too. */
  readonly xactCommit: number;
  readonly xactRollback: number;
  /** The next transaction id: transactions that wrote something (only those are given one). */
  readonly nextXid: number;
  /** WAL fsyncs (pg_stat_io, object wal), when this PostgreSQL reports them. */
  readonly walFsyncs: number | null;
}

/** What PostgreSQL wrote since it started (pg_stat_wal, pg_stat_checkpointer, pg_stat_io), and the raw table's size. */
export interface PgWrites {
  readonly walBytes: number;
  readonly walFullPageImages: number;
  readonly checkpoints: number;
  /** Buffers client backends wrote out themselves (to evict them, mostly), rather than the background writer or checkpointer. */
  readonly backendWrites: number;
  /** inbound_raw_messages with its TOAST table and indexes: a queue whose rows live about a second. */
  readonly rawTableBytes: number;
}

export class PgStats {
  constructor(private readonly client: pg.Client) {}

  /** PgWrites now, or null where this PostgreSQL lacks the views (pg_stat_checkpointer is 17+). */
  async writes(): Promise<PgWrites | null> {
    await this.client.query("select pg_stat_clear_snapshot()");
    const { rows } = await this.client
      .query<{ wal_bytes: string; wal_fpi: string; checkpoints: string; backend_writes: string; raw_bytes: string }>(
        `select (select wal_bytes::text from pg_stat_wal) as wal_bytes, (select wal_fpi::text from pg_stat_wal) as wal_fpi,
                (select (num_timed + num_requested)::text from pg_stat_checkpointer) as checkpoints,
                (select coalesce(sum(writes), 0)::text from pg_stat_io where backend_type = 'client backend') as backend_writes,
                pg_total_relation_size('inbound_raw_messages')::text as raw_bytes`,
      )
      .catch(() => ({ rows: [] }));
    const row = rows[0];
    if (!row) return null;
    return {
      walBytes: Number(row.wal_bytes),
      walFullPageImages: Number(row.wal_fpi),
      checkpoints: Number(row.checkpoints),
      backendWrites: Number(row.backend_writes),
      rawTableBytes: Number(row.raw_bytes),
    };
  }

  async counters(): Promise<PgCounters> {
    await this.client.query("select pg_stat_clear_snapshot()");
    const { rows } = await this.client.query<{ xact_commit: string; xact_rollback: string; next_xid: string }>(
      `select xact_commit::text, xact_rollback::text,
              pg_snapshot_xmax(pg_current_snapshot())::text as next_xid
       from pg_stat_database where datname = current_database()`,
    );
    const walFsyncs = await this.client
      .query<{ fsyncs: string | null }>(`select sum(fsyncs)::text as fsyncs from pg_stat_io where object = 'wal'`)
      .then((r) => (r.rows[0]?.fsyncs == null ? null : Number(r.rows[0].fsyncs)))
      .catch(() => null);
    const row = rows[0]!;
    return {
      at: performance.now(),
      xactCommit: Number(row.xact_commit),
      xactRollback: Number(row.xact_rollback),
      nextXid: Number(row.next_xid),
      walFsyncs,
    };
  }

  /** Raw messages not yet processed, and webhook deliveries not yet done: work still running after a load run. */
  async backlog(): Promise<{ raw: number; deliveries: number }> {
    const { rows } = await this.client.query<{ raw: string; deliveries: string }>(
      `select (select count(*) from inbound_raw_messages where status = 'pending')::text as raw,
              (select count(*) from webhook_deliveries where status in ('pending', 'delivering'))::text as deliveries`,
    );
    return { raw: Number(rows[0]!.raw), deliveries: Number(rows[0]!.deliveries) };
  }

  /** What the drain limit left unfinished: raw messages and deliveries marked failed, with the bench as reason. */
  async setAside(): Promise<number> {
    const raw = await this.client.query(
      `update inbound_raw_messages set status = 'failed', error = 'set aside by the benchmark after its drain limit'
       where status = 'pending'`,
    );
    const deliveries = await this.client.query(
      `update webhook_deliveries set status = 'failed', last_error = 'set aside by the benchmark after its drain limit'
       where status in ('pending', 'delivering')`,
    );
    return (raw.rowCount ?? 0) + (deliveries.rowCount ?? 0);
  }

  async storedMessages(): Promise<number> {
    const { rows } = await this.client.query<{ n: string }>(`select count(*)::text as n from messages`);
    return Number(rows[0]!.n);
  }

  /**
   * When each message stored since `since` was stored, by its Message-ID (epoch ms): its created_at, the start of the
   * store transaction that made it readable (at that transaction's commit, milliseconds later).
   */
  async storedAt(since: Date): Promise<Map<string, number>> {
    const { rows } = await this.client.query<{ internet_message_id: string; created_at: Date }>(
      `select internet_message_id, created_at from messages where created_at >= $1`,
      [since],
    );
    return new Map(rows.map((r) => [r.internet_message_id, r.created_at.getTime()]));
  }

  async failedRaw(): Promise<number> {
    const { rows } = await this.client.query<{ n: string }>(`select count(*)::text as n from inbound_raw_messages where status = 'failed'`);
    return Number(rows[0]!.n);
  }

  /** internet_message_id of each message id. */
  async internetMessageIds(messageIds: readonly string[]): Promise<Map<string, string>> {
    const { rows } = await this.client.query<{ id: string; internet_message_id: string }>(
      `select id, internet_message_id from messages where id = any($1::text[])`,
      [messageIds],
    );
    return new Map(rows.map((r) => [r.id, r.internet_message_id]));
  }
}
