// The Temporal worker: every workflow of workflows/ and every activity, on one task queue.
import { fileURLToPath } from "node:url";
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundleOption } from "@temporalio/worker";
import type { Database } from "../db/database.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Scanner } from "../scanning/scanner.js";
import { createWebhookDeliverer, type WebhookSettings } from "../webhooks/deliveries.js";
import { createAttachmentScanActivities } from "./activities/attachment-scan.js";
import { createInboxPurgeActivities } from "./activities/inbox-purge.js";
import { createDomainVerificationActivities, type DomainVerificationActivityDeps } from "./activities/domain-verification.js";
import { createWebhookDeliveryActivities } from "./activities/webhook-delivery.js";
import type { DeliveryOperations } from "../outbound/delivery/operations.js";
import { createDeliveryActivities } from "./activities/delivery.js";
import { createHoldActivities } from "./activities/delivery-holds.js";
import { createHoldOperations } from "../outbound/delivery/holds.js";
import { runsFromBuild, siblingModule } from "../runtime/sibling-module.js";
import { connectDiagnosed, PLAINTEXT, temporalConnectOptions, type TemporalAccess } from "./access.js";

export const WORKFLOWS_PATH = fileURLToPath(siblingModule("../../workflows/index", import.meta.url));
/** Made once by the build (src/cli/build.js); from the sources the workflows are bundled at every worker start. */
const BUILT_WORKFLOW_BUNDLE = runsFromBuild(import.meta.url) ? fileURLToPath(new URL("../../workflow-bundle.js", import.meta.url)) : undefined;

export function createActivities(deps: {
  db: Database;
  scanner: Scanner;
  scanErrorRetryInitialMs?: number;
  webhooks: WebhookSettings;
  domainVerification: DomainVerificationActivityDeps;
  delivery: DeliveryOperations;
  holdTimeoutMs: number;
  metrics?: Metrics;
}) {
  return {
    ...createDomainVerificationActivities(deps.domainVerification),
    ...createInboxPurgeActivities(deps.db),
    ...createAttachmentScanActivities(deps),
    ...createWebhookDeliveryActivities(createWebhookDeliverer(deps.db, deps.webhooks, deps.metrics?.webhooks)),
    ...createDeliveryActivities(deps.delivery),
    ...createHoldActivities(createHoldOperations(deps.db.sql, deps.holdTimeoutMs)),
  };
}

export interface WorkerOptions {
  readonly address: string;
  /** TLS and API key of the connection (config.temporalAccess); plaintext when absent. */
  readonly access?: TemporalAccess;
  /** How long shutdown lets activities in flight finish before they are cancelled (their attempts go back to Temporal). */
  readonly shutdownGraceMs?: number;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly db: Database;
  /** The attachment scanner of the scan activities (createScanner(config.scanning)). */
  readonly scanner: Scanner;
  /** The first wait before a scanner error verdict is retried (config.scanning.errorRetryInitialMs); 2 s when absent. */
  readonly scanErrorRetryInitialMs?: number;
  /** Request timeout, attempts and address policy of the webhook delivery activities (config.webhooks). */
  readonly webhooks: WebhookSettings;
  /** The verifier and refresh age of the domain re-check activity (createConfiguredVerifier, config.customerDomains). */
  readonly domainVerification: DomainVerificationActivityDeps;
  /** Outbound delivery's operations (createDeliveryOperations: routing, DNS, DKIM keys, kept connections). */
  readonly delivery: DeliveryOperations;
  /** How long a held submission waits for a decision before it is rejected as hold_expired (HOLD_TIMEOUT). */
  readonly holdTimeoutMs: number;
  /** Webhook attempts are recorded here (delivery outcomes through `delivery.metrics`). */
  readonly metrics?: Metrics;
  /** A prebuilt bundle (tests share one); otherwise the build's, or workflows/ bundled at start. */
  readonly workflowBundle?: WorkflowBundleOption;
}

let runtimeInstalled = false;

/**
 * Installs this process's Temporal runtime, which can be installed once per process, before the first worker
 * connection: the SDK's logs at WARN (it logs every worker state change at INFO on stdout), and, given
 * `prometheusAddress` (host:port), the SDK's own metrics on a Prometheus exporter there. Returns whether that
 * exporter runs: a runtime installed before (by an earlier worker of this process) is kept as it is.
 */
export function installTemporalRuntime(prometheusAddress?: string): boolean {
  if (runtimeInstalled) return false;
  // A runtime that failed to start (its exporter's port taken) is not installed: the next call may install one.
  Runtime.install({
    logger: new DefaultLogger("WARN"),
    // The SDK would shut its workers down on SIGTERM itself, before the drain lets SMTP attempts finish
    // (src/roles/worker.ts): the process's own handler stops them, in its order.
    shutdownSignals: [],
    ...(prometheusAddress ? { telemetryOptions: { metrics: { prometheus: { bindAddress: prometheusAddress } } } } : {}),
  });
  runtimeInstalled = true;
  return prometheusAddress !== undefined;
}

export async function createWorker(options: WorkerOptions): Promise<Worker> {
  installTemporalRuntime();
  const connection = await connectDiagnosed(await temporalConnectOptions(options.address, options.access ?? PLAINTEXT), (o) => NativeConnection.connect(o));
  return Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: createActivities(options),
    ...(options.shutdownGraceMs === undefined ? {} : { shutdownGraceTime: options.shutdownGraceMs }),
    ...workflowsOf(options.workflowBundle),
  });
}

function workflowsOf(prebuilt: WorkflowBundleOption | undefined): { workflowBundle: WorkflowBundleOption } | { workflowsPath: string } {
  if (prebuilt) return { workflowBundle: prebuilt };
  if (BUILT_WORKFLOW_BUNDLE) return { workflowBundle: { codePath: BUILT_WORKFLOW_BUNDLE } };
  return { workflowsPath: WORKFLOWS_PATH };
}
