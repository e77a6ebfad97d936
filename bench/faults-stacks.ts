// The deployments the fault benchmark strikes, started through the CLI only:
//
//   whole   one `mailbox start` (embedded PostgreSQL and Temporal, every role in one process) on fixed ports; the
//           fault is `kill -9` of that process, then the same command again on the same DATA_DIR
//   roles   `mailbox serve --role api|worker|smtp`, each its own process, against one PostgreSQL and one Temporal
//           dev server (state on disk) that the benchmark starts; the faults are `kill -9` of each role then the
//           same command again on the same port, and a restart of PostgreSQL and of Temporal on theirs
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { Config } from "../src/config.js";
import { findFreePort } from "../src/runtime/free-port.js";
import { identityOf, isRunning } from "../src/runtime/watchdog.js";
import type { Fault, FaultTarget } from "./faults-phase.js";
import { startRole } from "./inbound-ours.js";
import { RAISED_LIMITS, raisedDefaults, startOurOutboundStack } from "./outbound-ours.js";
import type { Sink } from "./outbound-sink-process.js";
import { seed } from "./seed.js";
import { startServer, type Teardown } from "./stack.js";

export interface FaultStack {
  readonly target: FaultTarget;
  /** Keyed by the names BENCH_FAULTS uses. */
  readonly faults: Readonly<Record<string, Fault>>;
}

export interface StackOptions {
  readonly workDir: string;
  readonly config: Config;
  readonly sink: Sink;
  readonly sinkDomain: string;
  readonly inboxes: number;
  readonly log: (line: string) => void;
}

/** Deliveries deferred by a fault are retried after this long (the default minute would stretch every drain). */
const RETRY_INITIAL = "2s";

/** SIGKILL, then waits until the process is gone (its ports are free again). */
async function kill9(pid: number): Promise<void> {
  const identity = identityOf(pid);
  process.kill(pid, "SIGKILL");
  while (identity !== undefined && isRunning(identity)) await sleep(20);
}

async function inboxesOf(databaseUrl: string): Promise<{ ids: string[]; addresses: string[] }> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string; address: string }>(`select id, address from inboxes where status = 'active' order by address`);
    return { ids: rows.map((r) => r.id), addresses: rows.map((r) => r.address) };
  } finally {
    await db.end();
  }
}

export async function startWholeStack(options: StackOptions, teardown: Teardown): Promise<FaultStack> {
  const { config, log } = options;
  const dataDir = join(options.workDir, "start");
  await mkdir(dataDir, { recursive: true, mode: 0o755 });
  const [httpPort, smtpPort] = [await findFreePort(), await findFreePort()];
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    DATABASE_URL: "",
    TEMPORAL_ADDRESS: "",
    HTTP_PORT: String(httpPort),
    SMTP_PORT: String(smtpPort),
    TEMPORAL_UI_PORT: "0",
    BIND_HOST: "127.0.0.1",
    LOG_LEVEL: process.env["LOG_LEVEL"] || "error",
    SMTP_ROUTES: `${options.sinkDomain}=127.0.0.1:${options.sink.port}`,
    DELIVERY_RETRY_INITIAL: RETRY_INITIAL,
    ...Object.fromEntries(Object.entries(RAISED_LIMITS).map(([k, v]) => [k, String(v)])),
  };
  const start = () => startServer("mailbox start", ["src/cli/mailbox.js", "start"], env, [], teardown);
  log("starting `mailbox start` …");
  let server = await start();
  // runtime.json holds the embedded database's URL, which moves to another port at every start.
  const databaseUrl = async () => (JSON.parse(await readFile(join(dataDir, "runtime.json"), "utf8")) as { databaseUrl: string }).databaseUrl;
  const [apiKey] = await seed(await databaseUrl(), {
    organizations: 1,
    inboxesPerOrganization: options.inboxes,
    managedDomain: config.managedDomain,
    defaults: raisedDefaults(config),
  });
  const inboxes = await inboxesOf(await databaseUrl());
  return {
    target: {
      smtpPorts: [smtpPort],
      apiUrls: [server.url],
      apiKey: apiKey!,
      inboxIds: inboxes.ids,
      addresses: inboxes.addresses,
      sink: options.sink,
      sinkDomain: options.sinkDomain,
      databaseUrl,
    },
    faults: {
      start: {
        name: "kill -9 of mailbox start",
        async inflict() {
          await kill9(server.pid);
          server = await start();
        },
      },
    },
  };
}

/**
 * `replicas` processes of each role (the first of each as bench:outbound starts them, the others beside them on
 * ports of their own). The role faults kill -9 the last process of their role (or of every role: "roles") and
 * start it again on the same ports.
 */
export async function startRolesStack(options: StackOptions & { readonly replicas?: number }, teardown: Teardown): Promise<FaultStack> {
  const { workDir, log } = options;
  const replicas = options.replicas ?? 1;
  const stack = await startOurOutboundStack(
    {
      workDir,
      config: options.config,
      inboxes: options.inboxes,
      sinkDomain: options.sinkDomain,
      sinkPort: options.sink.port,
      retryInitial: RETRY_INITIAL,
      log,
      // Restarted by the faults, with the same ports and state.
      infrastructure: { embedded: true, persistentTemporal: true },
    },
    teardown,
  );
  // The stack's own connections die with a PostgreSQL restart; the counts open their own.
  for (const client of [stack.db, stack.sampler]) client.on("error", () => undefined);
  type Role = "api" | "worker" | "smtp";
  interface Replica {
    pid: number;
    readonly env: Record<string, string>;
    readonly dir: string;
  }
  const portsOf = (summary: { api: string | null; smtp: string | null }) => ({
    HTTP_PORT: summary.api?.split(":").pop() ?? "0",
    SMTP_PORT: summary.smtp?.split(":").pop() ?? "0",
  });
  const processes: Record<Role, Replica[]> = { api: [], worker: [], smtp: [] };
  for (const first of [stack.api, stack.worker, stack.smtp]) {
    processes[first.role as Role].push({ pid: first.pid, env: { ...stack.roleEnv, ...portsOf(first.summary), DATA_DIR: join(workDir, first.role) }, dir: workDir });
  }
  if (replicas > 1) log(`starting ${replicas - 1} more process(es) of each role …`);
  for (let k = 1; k < replicas; k++) {
    await Promise.all(
      (["api", "worker", "smtp"] as const).map(async (role) => {
        const dir = join(workDir, `${role}-${k}`);
        await mkdir(dir, { recursive: true });
        const started = await startRole(role, { ...stack.roleEnv, DATA_DIR: dir }, dir, teardown);
        processes[role].push({ pid: started.pid, env: { ...stack.roleEnv, ...portsOf(started.summary), DATA_DIR: dir }, dir });
      }),
    );
  }
  const restart = async (role: Role) => {
    const victim = processes[role].at(-1)!;
    await kill9(victim.pid);
    victim.pid = (await startRole(role, victim.env, victim.dir, teardown)).pid;
  };
  const killRole = (role: Role): Fault => ({ name: `kill -9 of ${replicas > 1 ? "one process of " : ""}the ${role} role`, inflict: () => restart(role) });
  const inboxes = await inboxesOf(stack.infra.databaseUrl);
  return {
    target: {
      smtpPorts: processes.smtp.map((p) => Number(p.env["SMTP_PORT"])),
      apiUrls: processes.api.map((p) => `http://127.0.0.1:${p.env["HTTP_PORT"]}`),
      apiKey: stack.apiKey,
      inboxIds: inboxes.ids,
      addresses: inboxes.addresses,
      sink: options.sink,
      sinkDomain: options.sinkDomain,
      databaseUrl: async () => stack.infra.databaseUrl,
    },
    faults: {
      smtp: killRole("smtp"),
      api: killRole("api"),
      worker: killRole("worker"),
      roles: {
        name: `kill -9 of ${replicas > 1 ? "one process of " : ""}each role at once`,
        async inflict() {
          await Promise.all((["api", "worker", "smtp"] as const).map(restart));
        },
      },
      postgres: { name: "PostgreSQL restart (fast shutdown)", inflict: () => stack.infra.restartPostgres!() },
      temporal: { name: "Temporal restart", inflict: () => stack.infra.restartTemporal!() },
    },
  };
}
