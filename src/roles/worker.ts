// The worker role: the Temporal worker (every workflow and activity on the configured task queue), the delivery
// queue's dispatcher beside it, and the periodic jobs (reconcilers and pruning). Stopping it stops the jobs and the
// dispatcher, lets SMTP attempts under way finish within the drain grace, then shuts the worker down.
import { Client } from "@temporalio/client";
import type { Worker, WorkflowBundleOption } from "@temporalio/worker";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import { createConfiguredResolver } from "../dns/servers.js";
import { createDkimKeyVault } from "../domains/dkim-keys.js";
import { createConfiguredVerifier } from "../domains/setup.js";
import { createDkimSigningKeys } from "../domains/signing-keys.js";
import { domainVerificationReconciler } from "../domains/verification-reconciler.js";
import { pruneEventLog } from "../events/log.js";
import { purgeReconciler } from "../inboxes/purge-reconciler.js";
import { pruneCounterWindows } from "../jobs/counter-windows.js";
import { reconcilerJob, startPeriodicJobs } from "../jobs/periodic-jobs.js";
import { uploadExpiryReconciler } from "../uploads/expiry.js";
import { createLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { createDeliveryOperations, deliverySettingsOf, type Deliverer, type DeliveryDeps } from "../outbound/delivery/deliverer.js";
import { managedDkimKeySource } from "../outbound/delivery/managed-dkim.js";
import { createDeliveryDispatcher, type DeliveryStarter } from "../outbound/delivery/queue.js";
import { deliveryReconciler } from "../outbound/delivery/reconciler.js";
import { holdReconciler } from "../outbound/delivery/hold-reconciler.js";
import { createSmtpConnections } from "../outbound/delivery/smtp-attempt.js";
import { createInFlight, drainGraceMs } from "../runtime/drain.js";
import { findFreePort } from "../runtime/free-port.js";
import { attachmentScanReconciler } from "../scanning/attachment-scan-reconciler.js";
import { createScanner } from "../scanning/configured-scanner.js";
import {
  createAttachmentScanStarter,
  createDeliveryStarter,
  createDomainVerificationStarter,
  createHoldDecisionNotifier,
  createInboxPurgeStarter,
  createWebhookRetryStarter,
} from "../temporal/client.js";
import { createWorker, installTemporalRuntime } from "../temporal/worker.js";
import { webhookDeliveryReconciler } from "../webhooks/deliveries.js";
import { dkimKeySecretOf } from "./secrets.js";
import type { SharedDeps } from "./shared.js";

/**
 * Starts the worker role: the SDK's metrics into the process's registry, the worker with its dispatcher, and the
 * periodic jobs, which start what lost its workflow through the starters of `temporal`.
 */
export async function startWorkerRole(
  config: Config,
  db: Database,
  temporal: Client,
  temporalAddress: string,
  shared: SharedDeps,
): Promise<{ stop(): Promise<void> }> {
  await exportTemporalMetrics(shared.metrics, shared.log);
  const worker = await runConfiguredWorker(config, db, temporalAddress, { shared });
  const queue = config.temporalTaskQueue;
  const jobs = startPeriodicJobs(
    [
      reconcilerJob(purgeReconciler(db, createInboxPurgeStarter(temporal, queue, config.purgeBatchSize))),
      reconcilerJob(deliveryReconciler(db, queue, worker.deliveries)),
      reconcilerJob(holdReconciler(db.sql, queue, worker.deliveries, createHoldDecisionNotifier(temporal, queue))),
      reconcilerJob(attachmentScanReconciler(db, createAttachmentScanStarter(temporal, queue))),
      reconcilerJob(webhookDeliveryReconciler(db, createWebhookRetryStarter(temporal, queue, config.webhooks), config.webhooks)),
      reconcilerJob(domainVerificationReconciler(db, createDomainVerificationStarter(temporal, queue), config.customerDomains.refreshMs)),
      reconcilerJob(uploadExpiryReconciler(db)),
      { name: "counter window pruning", run: () => pruneCounterWindows(db) },
      { name: "event log pruning", run: () => pruneEventLog(db.sql, config.eventRetentionMs) },
    ],
    shared.log,
  );
  return {
    async stop() {
      await Promise.all([worker.stop(), jobs.stop()]);
    },
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

/** The worker role's running part: the Temporal worker and the delivery queue's dispatcher beside it. */
export interface RunningWorker {
  /** Starts deliveries on the worker's own connection (eager starts), for the delivery reconciler. */
  readonly deliveries: DeliveryStarter;
  /** Stops the dispatcher, then the worker (idempotent). */
  stop(): Promise<void>;
}

/**
 * Runs the worker of this configuration with the dispatcher that claims announced submissions, makes their first
 * attempts and starts the deliveries of what those leave open: a client on the worker's own connection, so the
 * server hands each new workflow's first task straight to this worker (requestEagerStart).
 */
export async function runConfiguredWorker(
  config: Config,
  db: Database,
  temporalAddress: string,
  options: { workflowBundle?: WorkflowBundleOption; deliveryMxPort?: number; shared?: WorkerShared } = {},
): Promise<RunningWorker> {
  const log = options.shared?.log ?? createLogger(config.logLevel);
  const shared = options.shared ?? { log };
  const connections = createSmtpConnections({ ehloName: config.smtp.hostname, timeoutMs: config.delivery.timeoutMs, idleMs: config.delivery.connectionIdleMs });
  const attempts = createInFlight();
  // One deliverer for the dispatcher's first attempts and the activities: one set of kept connections, one drain.
  const deliverer = createDeliveryOperations({
    ...(await createConfiguredDeliveryDeps(config, db, options.deliveryMxPort, shared)),
    firstAttemptEnded: (submissionId) => dispatcher.firstAttemptEnded(submissionId),
    connections,
    attempts,
  });
  const dispatcher = createDeliveryDispatcher({
    db,
    taskQueue: config.temporalTaskQueue,
    capacity: config.delivery.concurrency,
    schedule: config.delivery,
    deliverer,
    workflows: config.delivery.workflows,
    log,
  });
  const worker = await createConfiguredWorker(config, db, temporalAddress, options.workflowBundle, { deliverer, shared });
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
        // finish within the grace is cut here, so its outcome (deferred) is still recorded and handed to a workflow.
        await attempts.settled(drainGraceMs(config.shutdownTimeoutMs));
        attempts.abort();
        await dispatcher.settled();
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
    /** The process's deliverer (runConfiguredWorker shares it with the dispatcher); made here when omitted. */
    deliverer?: Deliverer;
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
    scanErrorRetryInitialMs: config.scanning.errorRetryInitialMs,
    webhooks: config.webhooks,
    domainVerification: {
      db,
      verifier: shared.verifier,
      refreshMs: config.customerDomains.refreshMs,
    },
    holdTimeoutMs: config.delivery.holdTimeoutMs,
    delivery: overrides.deliverer ?? createDeliveryOperations(await createConfiguredDeliveryDeps(config, db, overrides.deliveryMxPort, shared)),
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
