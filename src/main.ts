// Composition root: configuration → infrastructure (external or embedded) → database → Temporal → roles.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Client } from "@temporalio/client";
import type { Worker, WorkflowBundleOption } from "@temporalio/worker";
import { MAILBOX_SEARCH_ATTRIBUTES } from "./temporal/search-attributes.js";
import { startApiServer, type ApiServer } from "./api-server.js";
import { createAuthenticator } from "./auth/authenticator.js";
import type { Config } from "./config.js";
import { migrateDatabase, openDatabase, type Database } from "./db/database.js";
import { createCachingResolver } from "./dns/cache.js";
import { createConfiguredResolver } from "./dns/servers.js";
import { createDkimKeyVault } from "./domains/dkim-keys.js";
import { createDomains } from "./domains/domains.js";
import { createConfiguredCapabilities, createConfiguredVerifier } from "./domains/setup.js";
import { reconcileDomainVerifications } from "./domains/verification-reconciler.js";
import { createInboxes } from "./inboxes/inboxes.js";
import { createLogger, type Logger } from "./logger.js";
import { createMessages } from "./mailbox/messages.js";
import { createThreads } from "./mailbox/threads.js";
import { createCursorCodec } from "./pagination/cursor.js";
import { createComplaints } from "./outbound/complaints.js";
import { createOutbound } from "./outbound/outbound.js";
import { createDeliveryMetrics } from "./outbound/metrics.js";
import { createSuppressions } from "./outbound/suppressions.js";
import { startEmbeddedPostgres } from "./runtime/embedded-postgres.js";
import { ensureTemporalCli } from "./runtime/temporal-cli.js";
import { startTemporalDevServer } from "./runtime/temporal-dev-server.js";
import { RUNTIME_FILE } from "./runtime/operator-database.js";
import { identityOf } from "./runtime/watchdog.js";
import {
  connectTemporal,
  createDeliveryStarter,
  createDomainVerificationStarter,
  createInboxPurgeStarter,
  createWebhookRetryStarter,
  ensureSearchAttributes,
} from "./temporal/client.js";
import { pruneCounterWindows, startPurgeReconciler, startReconciler } from "./temporal/reconciler.js";
import { createWorker } from "./temporal/worker.js";
import { createWebhookDeliverer, deliveryLeaseMs, reconcileWebhookDeliveries } from "./webhooks/deliveries.js";
import { createWebhookEndpoints } from "./webhooks/endpoints.js";
import { createScanner } from "./scanning/scanner.js";
import { createSuppressionLookup } from "./validation/suppressions.js";
import { createEmailValidator } from "./validation/validator.js";
import { createAttachmentScanStarter } from "./scanning/attachment-scan-starter.js";
import { reconcileAttachmentScans } from "./scanning/attachment-scan-reconciler.js";
import { startSmtpRole, type SmtpRole } from "./inbound/smtp-role.js";
import { createWebhookOutbox, type WebhookOutbox } from "./webhooks/outbox.js";
import { createDkimSigningKeys } from "./domains/signing-keys.js";
import { deliverySettingsOf, type DeliveryDeps } from "./outbound/delivery/deliverer.js";
import { managedDkimKeySource } from "./outbound/delivery/managed-dkim.js";
import { startDeliveryReconciler } from "./outbound/delivery/reconciler.js";

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

export interface RunningService {
  readonly api: ApiServer | undefined;
  readonly smtp: SmtpRole | undefined;
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
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch((e: unknown) => log.warn("stop failed", { error: e }));
  };
  try {
    const db = await openDatabase(infra.databaseUrl);
    stops.push(() => db.close());
    await migrateDatabase(db);
    const temporal = await connectTemporal(infra.temporalAddress, config.temporalNamespace);
    stops.push(() => temporal.connection.close());
    await ensureSearchAttributes(temporal);

    let api: ApiServer | undefined;
    if (roles.includes("api")) {
      api = await startApi(config, db, temporal, log);
      stops.push(() => api!.close());
      log.info("API listening", { url: `http://${config.bindHost}:${api.port}`, openapi: `/openapi.json` });
    }
    if (roles.includes("worker")) {
      const worker = await createConfiguredWorker(config, db, infra.temporalAddress);
      const running = worker.run();
      stops.push(async () => {
        // The SDK shuts its workers down on SIGTERM and SIGINT by itself.
        if (worker.getState() === "RUNNING") worker.shutdown();
        await running;
      });
      const reconciler = startPurgeReconciler(db, createInboxPurgeStarter(temporal, config.temporalTaskQueue, config.purgeBatchSize), log);
      stops.push(reconciler.stop);
      const webhookRetries = createWebhookRetryStarter(temporal, config.temporalTaskQueue, config.webhooks);
      const webhookReconciler = startReconciler("webhook delivery", () => reconcileWebhookDeliveries(db, webhookRetries, config.webhooks), log);
      stops.push(webhookReconciler.stop);
      const scans = createAttachmentScanStarter(temporal, config.temporalTaskQueue);
      const scanReconciler = startReconciler("attachment scan", () => reconcileAttachmentScans(db, scans), log);
      stops.push(scanReconciler.stop);
      const deliveryReconciler = startDeliveryReconciler(db, temporal, config.temporalTaskQueue, log);
      stops.push(deliveryReconciler.stop);
      const domainWorkflows = createDomainVerificationStarter(temporal, config.temporalTaskQueue);
      const domainReconciler = startReconciler("domain verification", () => reconcileDomainVerifications(db, domainWorkflows, config.customerDomains.refreshMs), log);
      stops.push(domainReconciler.stop);
      const windowPruner = startReconciler("counter window pruning", () => pruneCounterWindows(db), log);
      stops.push(windowPruner.stop);
      log.info("worker polling", { taskQueue: config.temporalTaskQueue, temporal: infra.temporalAddress });
    }
    let smtp: SmtpRole | undefined;
    if (roles.includes("smtp")) {
      const outbox = createConfiguredOutbox(config, db, temporal, log);
      const role = await startSmtpRole({
        config,
        db,
        log,
        outbox,
        scans: createAttachmentScanStarter(temporal, config.temporalTaskQueue),
        domains: createConfiguredCapabilities(config, db, createConfiguredVerifier(config, db, createConfiguredResolver(config))),
      });
      smtp = role;
      stops.push(async () => {
        await role.stop();
        await outbox.drain();
      });
      log.info("SMTP listening", { address: `${config.bindHost}:${role.port}`, hostname: config.smtp.hostname });
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
    return { api, smtp, databaseUrl: infra.databaseUrl, temporalAddress: infra.temporalAddress, temporalUiUrl: infra.temporalUiUrl, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

export async function startApi(config: Config, db: Database, temporal: Client, log: Logger): Promise<ApiServer> {
  const cursors = createCursorCodec(await cursorSecretOf(config));
  // Verification asks DNS afresh; validation goes through a cache shared by every call of this process.
  const resolver = createConfiguredResolver(config);
  const verifier = createConfiguredVerifier(config, db, resolver);
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
  const validator = createEmailValidator({ resolver: createCachingResolver(resolver), suppressions: createSuppressionLookup(db) });
  const capabilities = createConfiguredCapabilities(config, db, verifier);
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
  const outbound = createOutbound({
    managedDomain: config.managedDomain,
    recipientsPerMessage: config.platformLimits.recipientsPerMessage,
    messageContentBytes: config.platformLimits.messageContentBytes,
    inboxes,
    domains: capabilities,
    deliveries: createDeliveryStarter(temporal, config.temporalTaskQueue),
    log,
  });
  const authenticator = createAuthenticator(db, { cacheMs: config.keyCacheMs, failuresPerMinute: config.api.authFailuresPerMinute });
  return startApiServer(
    {
      config,
      db,
      authenticator,
      inboxes,
      threads,
      messages,
      outbound,
      webhooks,
      domains,
      validator,
      log,
      deliveryMetrics: createDeliveryMetrics(),
      suppressions: createSuppressions({ cursors }),
      complaints: createComplaints({ cursors }),
    },
    config.httpPort,
    config.bindHost,
  );
}

/** The worker of this configuration: every workflow and activity on the configured task queue. */
export async function createConfiguredWorker(
  config: Config,
  db: Database,
  temporalAddress: string,
  workflowBundle?: WorkflowBundleOption,
  overrides: { deliveryMxPort?: number } = {},
): Promise<Worker> {
  return createWorker({
    address: temporalAddress,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    db,
    scanner: createScanner(config.scanning),
    webhooks: config.webhooks,
    domainVerification: {
      db,
      verifier: createConfiguredVerifier(config, db, createConfiguredResolver(config)),
      refreshMs: config.customerDomains.refreshMs,
    },
    delivery: await createConfiguredDeliveryDeps(config, db, overrides.deliveryMxPort),
    ...(workflowBundle ? { workflowBundle } : {}),
  });
}

/** Outbound delivery of this configuration: routes, DNS, the managed and customer DKIM keys, the retry schedule. */
export async function createConfiguredDeliveryDeps(config: Config, db: Database, mxPort?: number): Promise<DeliveryDeps> {
  return {
    db,
    settings: deliverySettingsOf(config, mxPort),
    resolver: createConfiguredResolver(config),
    managedDkimKey: managedDkimKeySource(config),
    customerDkimKeys: createDkimSigningKeys({ db, vault: createDkimKeyVault(await dkimKeySecretOf(config)) }),
    log: createLogger(config.logLevel),
  };
}

/** The webhook outbox of this configuration: prompt first attempts, retries in Temporal. */
export function createConfiguredOutbox(config: Config, db: Database, temporal: Client, log: Logger): WebhookOutbox {
  return createWebhookOutbox({
    db,
    deliverer: createWebhookDeliverer(db, config.webhooks),
    retries: createWebhookRetryStarter(temporal, config.temporalTaskQueue, config.webhooks),
    log,
  });
}
