// Composition root: configuration → infrastructure (external or embedded) → database → Temporal → the shared
// dependencies → the roles asked for (src/roles/) → drain and shutdown.
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ApiServer } from "./api-server.js";
import type { Config } from "./config.js";
import { migrateDatabase, openDatabase, type Database } from "./db/database.js";
import { createLogger } from "./logger.js";
import { startStatusServer } from "./metrics/status.js";
import { createSharedDeps, type SharedDeps } from "./roles/shared.js";
import type { SmtpRole } from "./roles/smtp.js";
import { drainGraceMs } from "./runtime/drain.js";
import { startInfrastructure, type Infrastructure } from "./runtime/infrastructure.js";
import { RUNTIME_FILE } from "./runtime/operator-database.js";
import { identityOf } from "./runtime/watchdog.js";
import { connectTemporal, ensureSearchAttributes } from "./temporal/client.js";

export type Role = "api" | "worker" | "smtp";

export interface RunningService {
  readonly api: ApiServer | undefined;
  readonly smtp: SmtpRole | undefined;
  /** The port of /healthz, /readyz and /metrics when STATUS_PORT is set. */
  readonly statusPort: number | undefined;
  readonly databaseUrl: string;
  readonly temporalAddress: string;
  /** The embedded Temporal dev server's Web UI, when there is one. */
  readonly temporalUiUrl: string | null;
  stop(): Promise<void>;
}

/** Starts the given roles against external or embedded infrastructure. */
export async function startService(config: Config, roles: readonly Role[], options: { embedded: boolean }): Promise<RunningService> {
  const log = createLogger(config.logLevel);
  if (!options.embedded && (!config.databaseUrl || !config.temporalAddress)) {
    throw new Error("serve needs DATABASE_URL and TEMPORAL_ADDRESS; use `mailbox start` for the embedded stack");
  }
  const infra = await startInfrastructure(config, log);
  const stops: (() => Promise<void>)[] = [infra.stop];
  // The roles' drains run together, each within its grace (SIGTERM's budget is for all of them at once); what they
  // use — connections, pools, the status port, the embedded servers — closes after them, last opened first.
  const drains: (() => Promise<void>)[] = [];
  let draining = false;
  const stopFailed = (e: unknown) => log.warn("stop failed", { error: e });
  const stop = async () => {
    draining = true;
    await Promise.all(drains.map((d) => d().catch(stopFailed)));
    for (const s of stops.reverse()) await s().catch(stopFailed);
  };
  try {
    const db = await openDatabase(infra.databaseUrl, { poolMax: config.database.poolMax, ssl: config.database });
    stops.push(() => db.close());
    await migrateDatabase(db);
    const temporal = await connectTemporal(infra.temporalAddress, config.temporalNamespace, config.temporalAccess);
    stops.push(() => temporal.connection.close());
    await ensureSearchAttributes(temporal);
    const shared = createSharedDeps(config, db, temporal, log);
    // A draining process is taken out of its load balancer's rotation while it finishes what it has.
    shared.readiness.add({
      name: "drain",
      check: async () => {
        if (draining) throw new Error("shutting down");
      },
    });

    // Each role's modules are loaded only when it starts: an api process never compiles the Temporal worker, nor a
    // worker the API server.
    let api: ApiServer | undefined;
    if (roles.includes("api")) {
      const { startApi } = await import("./roles/api.js");
      api = await startApi(config, db, temporal, log, shared);
      drains.push(() => api!.close(drainGraceMs(config.shutdownTimeoutMs)));
      log.info("API listening", { url: `http://${config.bindHost}:${api.port}`, openapi: `/openapi.json` });
    }
    if (roles.includes("worker")) {
      const { startWorkerRole } = await import("./roles/worker.js");
      drains.push((await startWorkerRole(config, db, temporal, infra.temporalAddress, shared)).stop);
      log.info("worker polling", { taskQueue: config.temporalTaskQueue, temporal: infra.temporalAddress });
    }
    let smtp: SmtpRole | undefined;
    if (roles.includes("smtp")) {
      smtp = await startSmtp(config, db, infra, shared);
      drains.push(smtp.stop);
    }
    const statusPort = await startStatus(config, shared, api !== undefined, stops);
    if (options.embedded) await recordRuntime(config, infra, stops);
    if (infra.temporalUiUrl) log.info("Temporal Web UI", { url: infra.temporalUiUrl });
    return { api, smtp, statusPort, databaseUrl: infra.databaseUrl, temporalAddress: infra.temporalAddress, temporalUiUrl: infra.temporalUiUrl, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The smtp role, ready once its listener accepts connections. */
async function startSmtp(config: Config, db: Database, infra: Infrastructure, shared: SharedDeps): Promise<SmtpRole> {
  const { startSmtpRole } = await import("./roles/smtp.js");
  const role = await startSmtpRole({
    config,
    db,
    log: shared.log,
    databaseUrl: infra.databaseUrl,
    temporalAddress: infra.temporalAddress,
    domains: shared.capabilities,
    metrics: shared.metrics,
  });
  shared.readiness.add({
    name: "smtp",
    check: async () => {
      if (!role.listening()) throw new Error("the SMTP listener is closed");
    },
  });
  shared.log.info("SMTP listening", { address: `${config.bindHost}:${role.port}`, hostname: config.smtp.hostname });
  return role;
}

/** /healthz, /readyz and /metrics on STATUS_PORT when it is set (the API port serves them too); its port. */
async function startStatus(config: Config, shared: SharedDeps, servesApi: boolean, stops: (() => Promise<void>)[]): Promise<number | undefined> {
  const { log } = shared;
  if (config.statusPort === undefined) {
    if (!servesApi) log.info("no STATUS_PORT: this process serves no /healthz, /readyz or /metrics");
    return undefined;
  }
  const status = await startStatusServer({ metrics: shared.metrics, readiness: shared.readiness, metricsToken: config.metricsToken }, config.statusPort, config.bindHost);
  stops.push(status.close);
  log.info("status listening", { url: `http://${config.bindHost}:${status.port}`, paths: ["/healthz", "/readyz", "/metrics"] });
  return status.port;
}

/** Where the embedded servers of this DATA_DIR are, for operator commands run beside it (removed at stop). */
async function recordRuntime(config: Config, infra: Infrastructure, stops: (() => Promise<void>)[]): Promise<void> {
  const file = join(config.dataDir, RUNTIME_FILE);
  await writeFile(file, JSON.stringify({ ...identityOf(process.pid), databaseUrl: infra.databaseUrl, temporalAddress: infra.temporalAddress }), { mode: 0o600 });
  stops.push(() => rm(file, { force: true }));
}
