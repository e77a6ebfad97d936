// Composition root: configuration → infrastructure (external or embedded) → database → Temporal → roles.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@temporalio/client";
import type { Worker, WorkflowBundleOption } from "@temporalio/worker";
import { MAILBOX_SEARCH_ATTRIBUTES } from "./temporal/search-attributes.js";
import { startApiServer, type ApiServer } from "./api-server.js";
import { createAuthenticator } from "./auth/authenticator.js";
import type { Config } from "./config.js";
import { migrateDatabase, openDatabase, type Database } from "./db/database.js";
import { createCachingResolver } from "./dns/cache.js";
import type { DnsResolver } from "./dns/resolver.js";
import { createConfiguredResolver } from "./dns/servers.js";
import type { DomainCapabilities } from "./domains/capabilities.js";
import { createDkimKeyVault } from "./domains/dkim-keys.js";
import { createDomains } from "./domains/domains.js";
import { createConfiguredCapabilities, createConfiguredVerifier } from "./domains/setup.js";
import { domainVerificationReconciler } from "./domains/verification-reconciler.js";
import { createHolds } from "./events/holds.js";
import { createEventHub } from "./events/hub.js";
import { pruneEventLog } from "./events/log.js";
import { createEventStreams } from "./events/stream.js";
import type { DomainVerifier } from "./domains/verifier.js";
import { createInboxes } from "./inboxes/inboxes.js";
import { createLogger, type Logger } from "./logger.js";
import { createMessages } from "./mailbox/messages.js";
import { createThreads } from "./mailbox/threads.js";
import { createMessageWaits } from "./mailbox/wait.js";
import { createMetrics, type Metrics } from "./metrics/metrics.js";
import { createReadiness, databaseReadiness, startStatusServer, temporalReadiness, type Readiness } from "./metrics/status.js";
import { createCursorCodec } from "./pagination/cursor.js";
import { createComplaints } from "./outbound/complaints.js";
import type { OutboundDeps } from "./outbound/outbound.js";
import { createDeliveryMetrics } from "./outbound/metrics.js";
import { createSuppressions } from "./outbound/suppressions.js";
import { startEmbeddedPostgres } from "./runtime/embedded-postgres.js";
import { ensureTemporalCli } from "./runtime/temporal-cli.js";
import { startTemporalDevServer } from "./runtime/temporal-dev-server.js";
import { findFreePort } from "./runtime/free-port.js";
import { RUNTIME_FILE } from "./runtime/operator-database.js";
import { identityOf } from "./runtime/watchdog.js";
import { createInFlight, drainGraceMs, type InFlight } from "./runtime/drain.js";
import {
  connectTemporal,
  createDeliveryStarter,
  createDomainVerificationStarter,
  createInboxPurgeStarter,
  createWebhookRetryStarter,
  ensureSearchAttributes,
} from "./temporal/client.js";
import { pruneCounterWindows, purgeReconciler, reconcilerJob, startPeriodicJobs } from "./temporal/reconciler.js";
import { createWorker, installTemporalRuntime } from "./temporal/worker.js";
import { deliveryLeaseMs, webhookDeliveryReconciler } from "./webhooks/deliveries.js";
import { createWebhookEndpoints } from "./webhooks/endpoints.js";
import { createScanner } from "./scanning/scanner.js";
import { createSuppressionLookup } from "./validation/suppressions.js";
import { createEmailValidator } from "./validation/validator.js";
import { createAttachmentScanStarter } from "./scanning/attachment-scan-starter.js";
import { attachmentScanReconciler } from "./scanning/attachment-scan-reconciler.js";
import { startSmtpRole, type SmtpRole } from "./inbound/smtp-role.js";
import { createDkimSigningKeys } from "./domains/signing-keys.js";
import { deliverySettingsOf, type DeliveryDeps } from "./outbound/delivery/deliverer.js";
import type { DeliveryStarter } from "./outbound/delivery/queue.js";
import { createSmtpConnections, type SmtpConnections } from "./outbound/delivery/smtp-attempt.js";
import { managedDkimKeySource } from "./outbound/delivery/managed-dkim.js";
import { deliveryReconciler } from "./outbound/delivery/reconciler.js";
import { createDeliveryDispatcher, createDeliveryQueue } from "./outbound/delivery/queue.js";

export type Role = "api" | "worker" | "smtp";

interface Infrastructure {
  readonly databaseUrl: string;
  readonly temporalAddress: string;
  readonly temporalUiUrl: string | null;
  stop(): Promise<void>;
}

/** External PostgreSQL and Temporal when configured; otherwise embedded ones under DATA_DIR. */
async function startInfrastructure(config: Config, log: Logger): Promise<Infrastructure> {
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      const pg = await startEmbeddedPostgres({ dataDir: config.dataDir });
      stops.push(pg.stop);
      databaseUrl = pg.url;
      log.info("embedded PostgreSQL started", { dataDir: join(config.dataDir, "postgres") });
    }
    let temporalAddress = config.temporalAddress;
    let temporalUiUrl: string | null = null;
    if (!temporalAddress) {
      const cliPath = await ensureTemporalCli({ toolsDir: config.toolsDir, log: (line) => log.info(line) });
      const temporal = await startTemporalDevServer({
        cliPath,
        dataDir: config.dataDir,
        uiPort: config.temporalUiPort,
        namespace: config.temporalNamespace,
        searchAttributes: MAILBOX_SEARCH_ATTRIBUTES,
      });
      stops.push(temporal.stop);
      temporalAddress = temporal.address;
      temporalUiUrl = temporal.uiUrl;
      if (config.temporalUiPort !== 0 && temporalUiUrl !== `http://127.0.0.1:${config.temporalUiPort}`) {
        log.warn("TEMPORAL_UI_PORT is taken (another instance?): the Temporal Web UI listens elsewhere", { url: temporalUiUrl });
      }
    }
    return { databaseUrl, temporalAddress, temporalUiUrl, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/** The cursor-signing secret: configured, or generated once and kept under DATA_DIR. */
function cursorSecretOf(config: Config): Promise<string> {
  return persistedSecret(config, config.cursorSecret, "cursor-secret");
}

/** The key that seals DKIM private keys: configured, or generated once and kept under DATA_DIR. */
function dkimKeySecretOf(config: Config): Promise<string> {
  return persistedSecret(config, config.customerDomains.dkimKeySecret, "dkim-key-secret");
}

async function persistedSecret(config: Config, configured: string | undefined, fileName: string): Promise<string> {
  if (configured) return configured;
  const file = join(config.dataDir, fileName);
  try {
    return (await readFile(file, "utf8")).trim();
  } catch {
    const secret = randomBytes(32).toString("base64url");
    await mkdir(config.dataDir, { recursive: true });
    await writeFile(file, secret, { mode: 0o600, flag: "wx" }).catch(() => undefined);
    return (await readFile(file, "utf8")).trim();
  }
}

/**
 * What the roles of one process share, built once here and handed to each role that needs it: one logger, one DNS
 * resolver (asked afresh: verification and delivery; validation wraps it in a cache of its own), one domain
 * verifier and capability checker (one re-check per domain at a time in the process), one metrics registry and
 * one readiness list (each role adds what it needs).
 */
export interface SharedDeps {
  readonly log: Logger;
  readonly resolver: DnsResolver;
  readonly verifier: DomainVerifier;
  readonly capabilities: DomainCapabilities;
  readonly metrics: Metrics;
  readonly readiness: Readiness;
}

export function createSharedDeps(config: Config, db: Database, temporal: Client, log: Logger = createLogger(config.logLevel)): SharedDeps {
  const resolver = createConfiguredResolver(config);
  const verifier = createConfiguredVerifier(config, db, resolver);
  const metrics = createMetrics();
  metrics.gauge(
    "mailbox_db_pool_connections",
    "Connections of the process's PostgreSQL pools (sql: the hot paths', orm: MikroORM's) by state: busy, idle, and callers waiting for one.",
    ["pool", "state"],
    async () =>
      Object.entries(await db.poolUse()).flatMap(([pool, use]) => [
        { labels: { pool, state: "busy" }, value: use.open - use.idle },
        { labels: { pool, state: "idle" }, value: use.idle },
        { labels: { pool, state: "waiting" }, value: use.waiting },
      ]),
  );
  return {
    log,
    resolver,
    verifier,
    capabilities: createConfiguredCapabilities(config, db, verifier),
    metrics,
    readiness: createReadiness(log, [databaseReadiness(db), temporalReadiness(temporal)]),
  };
}

/** The SDK's Prometheus exporter on a loopback port of its own, scraped into this process's /metrics. */
async function exportTemporalMetrics(metrics: Metrics, log: Logger): Promise<void> {
  const address = `127.0.0.1:${await findFreePort()}`;
  try {
    if (!installTemporalRuntime(address)) return;
  } catch (error) {
    log.warn("the Temporal SDK's metrics exporter did not start; its metrics are missing from /metrics", { error });
    return;
  }
  metrics.appendScrape(async () => {
    const res = await fetch(`http://${address}/metrics`, { signal: AbortSignal.timeout(2_000) });
    return res.ok ? res.text() : "";
  });
}

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

    let api: ApiServer | undefined;
    if (roles.includes("api")) {
      api = await startApi(config, db, temporal, log, shared);
      drains.push(() => api!.close(drainGraceMs(config.shutdownTimeoutMs)));
      log.info("API listening", { url: `http://${config.bindHost}:${api.port}`, openapi: `/openapi.json` });
    }
    if (roles.includes("worker")) {
      await exportTemporalMetrics(shared.metrics, log);
      const worker = await runConfiguredWorker(config, db, infra.temporalAddress, { shared });
      drains.push(worker.stop);
      const queue = config.temporalTaskQueue;
      const jobs = startPeriodicJobs(
        [
          reconcilerJob(purgeReconciler(db, createInboxPurgeStarter(temporal, queue, config.purgeBatchSize))),
          reconcilerJob(deliveryReconciler(db, worker.deliveries)),
          reconcilerJob(attachmentScanReconciler(db, createAttachmentScanStarter(temporal, queue))),
          reconcilerJob(webhookDeliveryReconciler(db, createWebhookRetryStarter(temporal, queue, config.webhooks), config.webhooks)),
          reconcilerJob(domainVerificationReconciler(db, createDomainVerificationStarter(temporal, queue), config.customerDomains.refreshMs)),
          { name: "counter window pruning", run: () => pruneCounterWindows(db) },
          { name: "event log pruning", run: () => pruneEventLog(db.sql, config.eventRetentionMs) },
        ],
        log,
      );
      drains.push(jobs.stop);
      log.info("worker polling", { taskQueue: queue, temporal: infra.temporalAddress });
    }
    let smtp: SmtpRole | undefined;
    if (roles.includes("smtp")) {
      const role = await startSmtpRole({
        config,
        db,
        log,
        databaseUrl: infra.databaseUrl,
        temporalAddress: infra.temporalAddress,
        domains: shared.capabilities,
        metrics: shared.metrics,
      });
      smtp = role;
      drains.push(role.stop);
      shared.readiness.add({
        name: "smtp",
        check: async () => {
          if (!role.listening()) throw new Error("the SMTP listener is closed");
        },
      });
      log.info("SMTP listening", { address: `${config.bindHost}:${role.port}`, hostname: config.smtp.hostname });
    }
    let statusPort: number | undefined;
    if (config.statusPort !== undefined) {
      const status = await startStatusServer({ metrics: shared.metrics, readiness: shared.readiness, metricsToken: config.metricsToken }, config.statusPort, config.bindHost);
      statusPort = status.port;
      stops.push(status.close);
      log.info("status listening", { url: `http://${config.bindHost}:${status.port}`, paths: ["/healthz", "/readyz", "/metrics"] });
    } else if (!api) {
      log.info("no STATUS_PORT: this process serves no /healthz, /readyz or /metrics");
    }
    if (options.embedded) {
      await writeFile(
        join(config.dataDir, RUNTIME_FILE),
        JSON.stringify({ ...identityOf(process.pid), databaseUrl: infra.databaseUrl, temporalAddress: infra.temporalAddress }),
        { mode: 0o600 },
      );
      stops.push(() => rm(join(config.dataDir, RUNTIME_FILE), { force: true }));
    }
    if (infra.temporalUiUrl) log.info("Temporal Web UI", { url: infra.temporalUiUrl });
    return { api, smtp, statusPort, databaseUrl: infra.databaseUrl, temporalAddress: infra.temporalAddress, temporalUiUrl: infra.temporalUiUrl, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

export async function startApi(
  config: Config,
  db: Database,
  temporal: Client,
  log: Logger,
  shared: SharedDeps = createSharedDeps(config, db, temporal, log),
): Promise<ApiServer> {
  const cursors = createCursorCodec(await cursorSecretOf(config));
  const { resolver, verifier, capabilities } = shared;
  const domains = createDomains({
    managedDomain: config.managedDomain,
    domainLimit: config.platformLimits.domains,
    records: config.customerDomains,
    cursors,
    vault: createDkimKeyVault(await dkimKeySecretOf(config)),
    verifier,
    workflows: createDomainVerificationStarter(temporal, config.temporalTaskQueue),
    log,
  });
  // Verification asks DNS afresh; validation goes through a cache shared by every call of this process.
  const validator = createEmailValidator({ resolver: createCachingResolver(resolver), suppressions: createSuppressionLookup(db) });
  const inboxes = createInboxes({
    managedDomain: config.managedDomain,
    customerDomains: capabilities,
    inboxLimit: config.platformLimits.inboxes,
    cursors,
    purges: createInboxPurgeStarter(temporal, config.temporalTaskQueue, config.purgeBatchSize),
    log,
  });
  const reads = { inboxes, cursors, maxPageBytes: config.maxPageBytes };
  const threads = createThreads(reads);
  const messages = createMessages(reads);
  const webhooks = createWebhookEndpoints({
    endpointLimit: config.platformLimits.webhookEndpoints,
    secretReplayMs: config.webhooks.secretReplayMs,
    deliveryLeaseMs: deliveryLeaseMs(config.webhooks),
    addressPolicy: config.webhooks,
    cursors,
  });
  const deliveries = createDeliveryQueue({ db, taskQueue: config.temporalTaskQueue, backlogMaxMs: config.delivery.backlogMaxMs, log });
  const outbound: OutboundDeps = {
    managedDomain: config.managedDomain,
    recipientsPerMessage: config.platformLimits.recipientsPerMessage,
    messageContentBytes: config.platformLimits.messageContentBytes,
    inboxes,
    domains: capabilities,
    deliveries,
    log,
  };
  const authenticator = createAuthenticator(db, { cacheMs: config.keyCacheMs, failuresPerMinute: config.api.authFailuresPerMinute });
  // Waits and streams wake on the event log's notifications (one listening connection per process).
  const hub = createEventHub(db.sql, log);
  const waits = createMessageWaits({
    inboxes,
    hub,
    holds: createHolds({ ...config.waits, errorCode: "too_many_waits", noun: "waits" }),
  });
  const streams = createEventStreams({
    inboxes,
    hub,
    holds: createHolds({ ...config.streams, errorCode: "too_many_streams", noun: "event streams" }),
    retentionMs: config.eventRetentionMs,
    keepAliveMs: config.streams.keepAliveMs,
  });
  const server = await startApiServer(
    {
      config,
      db,
      authenticator,
      inboxes,
      threads,
      messages,
      waits,
      streams,
      outbound,
      webhooks,
      domains,
      validator,
      log,
      status: { metrics: shared.metrics, readiness: shared.readiness, metricsToken: config.metricsToken },
      deliveryMetrics: createDeliveryMetrics(),
      suppressions: createSuppressions({ cursors }),
      complaints: createComplaints({ cursors }),
    },
    config.httpPort,
    config.bindHost,
  );
  return {
    port: server.port,
    async close(graceMs) {
      // Waits and streams end first (503 for a wait, the end of a stream), so the server's requests can finish.
      await hub.close();
      await server.close(graceMs);
      await deliveries.close();
    },
  };
}

/** The worker role's running part: the Temporal worker and the delivery queue's dispatcher beside it. */
export interface RunningWorker {
  /** Starts deliveries on the worker's own connection (eager starts), for the delivery reconciler. */
  readonly deliveries: DeliveryStarter;
  /** Stops the dispatcher, then the worker (idempotent). */
  stop(): Promise<void>;
}

/**
 * Runs the worker of this configuration with the dispatcher that claims announced submissions and starts their
 * deliveries: a client on the worker's own connection, so the server hands each new workflow's first task straight
 * to this worker (requestEagerStart).
 */
export async function runConfiguredWorker(
  config: Config,
  db: Database,
  temporalAddress: string,
  options: { workflowBundle?: WorkflowBundleOption; deliveryMxPort?: number; shared?: WorkerShared } = {},
): Promise<RunningWorker> {
  const log = options.shared?.log ?? createLogger(config.logLevel);
  const dispatcher = createDeliveryDispatcher({
    db,
    taskQueue: config.temporalTaskQueue,
    capacity: config.delivery.concurrency,
    schedule: config.delivery,
    log,
  });
  const connections = createSmtpConnections({ ehloName: config.smtp.hostname, timeoutMs: config.delivery.timeoutMs, idleMs: config.delivery.connectionIdleMs });
  const attempts = createInFlight();
  const worker = await createConfiguredWorker(config, db, temporalAddress, options.workflowBundle, {
    ...(options.deliveryMxPort === undefined ? {} : { deliveryMxPort: options.deliveryMxPort }),
    firstAttemptEnded: dispatcher.firstAttemptEnded,
    connections,
    attempts,
    shared: options.shared ?? { log },
  });
  const running = worker.run();
  const client = new Client({ connection: worker.connection!, namespace: config.temporalNamespace });
  const deliveries = createDeliveryStarter(client, config.temporalTaskQueue, { eager: true });
  await dispatcher.start(deliveries);
  let stopping: Promise<void> | undefined;
  return {
    deliveries,
    stop: () =>
      (stopping ??= (async () => {
        await dispatcher.stop();
        // The worker's shutdown abandons local activities (first attempts) rather than waiting for them, and an SMTP
        // transaction cut there is sent again by the next worker: attempts under way finish first. What does not
        // finish within the grace is cut here, so its outcome (deferred) still reaches its workflow.
        await attempts.settled(drainGraceMs(config.shutdownTimeoutMs));
        attempts.abort();
        worker.shutdown();
        await running;
        connections.close();
      })()),
  };
}

/** What a worker takes from its process's shared dependencies; what is not given is built for it. */
export type WorkerShared = Partial<Pick<SharedDeps, "log" | "resolver" | "verifier" | "metrics">>;

/** The worker of this configuration: every workflow and activity on the configured task queue. */
export async function createConfiguredWorker(
  config: Config,
  db: Database,
  temporalAddress: string,
  workflowBundle?: WorkflowBundleOption,
  overrides: {
    deliveryMxPort?: number;
    firstAttemptEnded?: (submissionId: string) => void;
    connections?: SmtpConnections;
    attempts?: InFlight;
    shared?: WorkerShared;
  } = {},
): Promise<Worker> {
  const resolver = overrides.shared?.resolver ?? createConfiguredResolver(config);
  const shared = {
    ...overrides.shared,
    resolver,
    verifier: overrides.shared?.verifier ?? createConfiguredVerifier(config, db, resolver),
  };
  return createWorker({
    address: temporalAddress,
    access: config.temporalAccess,
    shutdownGraceMs: drainGraceMs(config.shutdownTimeoutMs),
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    db,
    scanner: createScanner(config.scanning),
    webhooks: config.webhooks,
    domainVerification: {
      db,
      verifier: shared.verifier,
      refreshMs: config.customerDomains.refreshMs,
    },
    delivery: {
      ...(await createConfiguredDeliveryDeps(config, db, overrides.deliveryMxPort, shared)),
      ...(overrides.firstAttemptEnded ? { firstAttemptEnded: overrides.firstAttemptEnded } : {}),
      ...(overrides.connections ? { connections: overrides.connections } : {}),
      ...(overrides.attempts ? { attempts: overrides.attempts } : {}),
    },
    ...(shared.metrics ? { metrics: shared.metrics } : {}),
    ...(workflowBundle ? { workflowBundle } : {}),
  });
}

/** Outbound delivery of this configuration: routes, DNS, the managed and customer DKIM keys, the retry schedule. */
export async function createConfiguredDeliveryDeps(config: Config, db: Database, mxPort?: number, shared: WorkerShared = {}): Promise<DeliveryDeps> {
  return {
    db,
    settings: deliverySettingsOf(config, mxPort),
    resolver: shared.resolver ?? createConfiguredResolver(config),
    managedDkimKey: managedDkimKeySource(config),
    customerDkimKeys: createDkimSigningKeys({ db, vault: createDkimKeyVault(await dkimKeySecretOf(config)) }),
    log: shared.log ?? createLogger(config.logLevel),
    ...(shared.metrics ? { metrics: shared.metrics.delivery } : {}),
  };
}
