// The api role: the API server (Connect, gRPC, gRPC-Web, JSON /v1 and MCP on one port) over the domain modules it
// serves, each built here from the configuration and the process's shared dependencies. Closing it ends waits and
// streams first, then lets requests in flight finish, then closes the delivery queue's announcements.
import type { Client } from "@temporalio/client";
import { startApiServer, type ApiServer } from "../api-server.js";
import { createAuthenticator } from "../auth/authenticator.js";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import { createCachingResolver } from "../dns/cache.js";
import { createDkimKeyVault } from "../domains/dkim-keys.js";
import { createDomains } from "../domains/domains.js";
import { createHolds } from "../events/holds.js";
import { createEventHub } from "../events/hub.js";
import { createEventStreams } from "../events/stream.js";
import { createInboxes } from "../inboxes/inboxes.js";
import type { Logger } from "../logger.js";
import { createMessages } from "../mailbox/messages.js";
import { createThreads } from "../mailbox/threads.js";
import { createMessageWaits } from "../mailbox/wait.js";
import { createSenderRules } from "../senders/sender-rules.js";
import { createComplaints } from "../outbound/complaints.js";
import { createDeliveryQueue } from "../outbound/delivery/queue.js";
import { createDeliveryMetrics } from "../outbound/metrics.js";
import type { OutboundDeps } from "../outbound/outbound.js";
import { createSuppressions } from "../outbound/suppressions.js";
import { createCursorCodec } from "../pagination/cursor.js";
import { createDomainVerificationStarter, createHoldDecisionNotifier, createInboxPurgeStarter, createWebhookRetryStarter } from "../temporal/client.js";
import { configuredUploadDeps } from "../uploads/uploads.js";
import { createSuppressionLookup } from "../validation/suppressions.js";
import { createEmailValidator } from "../validation/validator.js";
import { deliveryLeaseMs } from "../webhooks/deliveries.js";
import { createWebhookEndpoints } from "../webhooks/endpoints.js";
import { createConfiguredOutbox } from "../webhooks/outbox.js";
import { cursorSecretOf, dkimKeySecretOf } from "./secrets.js";
import { createSharedDeps, type SharedDeps } from "./shared.js";

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
  const uploads = configuredUploadDeps(config, log);
  // submission.held events of sends reach the webhook endpoints that asked for them from here, as inbound
  // processing's message.received do from the smtp role.
  const outbox = createConfiguredOutbox(config, db, createWebhookRetryStarter(temporal, config.temporalTaskQueue, config.webhooks), log, shared.metrics.webhooks);
  const outbound: OutboundDeps = {
    managedDomain: config.managedDomain,
    recipientsPerMessage: config.platformLimits.recipientsPerMessage,
    messageContentBytes: config.platformLimits.messageContentBytes,
    inboxes,
    domains: capabilities,
    deliveries,
    files: { uploads, urlFetch: { policy: config.webhooks, ...config.uploads.urlFetch } },
    outbox,
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
      senderRules: createSenderRules({ inboxes }),
      outbound,
      uploads,
      holds: { decisions: createHoldDecisionNotifier(temporal, config.temporalTaskQueue), log },
      cursors,
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
      await outbox.drain();
      await deliveries.close();
    },
  };
}
