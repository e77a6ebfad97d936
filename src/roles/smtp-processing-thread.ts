// The smtp role's processing thread (started by src/inbound/processing.ts): the inbound processor with its parser
// threads, the webhook outbox, the attachment scan starter and the sweeper, each built here from the configuration,
// on a database pool and a Temporal client of the thread's own. Submissions come in as messages; the backlog goes
// out as reports.
import { parentPort, workerData } from "node:worker_threads";
import { createSenderAuthenticator } from "../authentication/sender-authentication.js";
import { openDatabase } from "../db/database.js";
import { createCachingResolver } from "../dns/cache.js";
import { createConfiguredResolver } from "../dns/servers.js";
import { NO_LOAD, type FromProcessing, type ProcessingLoad, type ProcessingThreadSettings, type ToProcessing } from "../inbound/processing.js";
import { createInboundProcessor } from "../inbound/processor.js";
import { startInboundSweeper } from "../inbound/sweeper.js";
import { createLogger } from "../logger.js";
import { createEmailParser } from "../mail/parse.js";
import { createConfiguredFeedbackReports } from "../outbound/feedback-reports.js";
import { lowerThreadPriority } from "../runtime/thread-priority.js";
import { connectTemporal, createAttachmentScanStarter, createWebhookRetryStarter } from "../temporal/client.js";
import { createConfiguredOutbox } from "../webhooks/outbox.js";

/**
 * Messages in processing per parser thread: the rest of processing waits on the database or on the sender's DNS
 * (authentication, before the parse), not on a parser; what they hold is bounded by the processing memory budget.
 */
const PROCESSING_PER_PARSER = 16;
/** Connections of the thread's pool: reads, two store transactions, outbox claims and the sweeper. */
const POOL_SIZE = 8;
/** How often the backlog is reported, when it changed. */
const REPORT_EVERY_MS = 50;

lowerThreadPriority();
const port = parentPort!;
const post = (message: FromProcessing) => port.postMessage(message);
const { config, databaseUrl, temporalAddress, sweeper: sweeperOptions } = workerData as ProcessingThreadSettings;
const log = createLogger(config.logLevel);
const db = await openDatabase(databaseUrl, { poolMax: POOL_SIZE, ssl: config.database });
const temporal = await connectTemporal(temporalAddress, config.temporalNamespace, config.temporalAccess);
const parser = createEmailParser({
  timeoutMs: config.inbound.parseTimeoutMs,
  memoryMb: config.inbound.parseMemoryMb,
  workers: config.inbound.concurrency,
  maxHeaderBytes: config.smtp.maxHeaderBytes,
  maxMimeParts: config.smtp.maxMimeParts,
});
// Counted here, reported with the load: the smtp role's metrics live on the main thread.
const webhookAttempts = { ...NO_LOAD.webhookAttempts };
const retries = createWebhookRetryStarter(temporal, config.temporalTaskQueue, config.webhooks);
const outbox = createConfiguredOutbox(config, db, retries, log, { attempted: (outcome, n = 1) => void (webhookAttempts[outcome] += n) });
const processor = createInboundProcessor({
  db,
  parser,
  outbox,
  scans: createAttachmentScanStarter(temporal, config.temporalTaskQueue),
  log,
  hostname: config.smtp.hostname,
  concurrency: config.inbound.concurrency * PROCESSING_PER_PARSER,
  memoryBytes: config.inbound.processingMemoryBytes,
  maxQueued: config.inbound.maxBacklogMessages,
  feedbackReports: createConfiguredFeedbackReports(config, db, log),
  // Once per message, beside its parse: the thread's own DNS cache, so warm senders cost no lookups.
  authenticator: config.inbound.authentication
    ? createSenderAuthenticator({
        resolver: createCachingResolver(createConfiguredResolver(config)),
        hostname: config.smtp.hostname,
        budgetMs: config.inbound.authenticationTimeoutMs,
        maxHeaderBytes: config.smtp.maxHeaderBytes,
      })
    : undefined,
});
const sweeper = startInboundSweeper(db, processor, log, sweeperOptions);

let reported: ProcessingLoad = NO_LOAD;
let taken = 0;
let takenBytes = 0;
const reporter = setInterval(() => {
  const { messages, bytes } = processor.backlog();
  const attempts = webhookAttempts.delivered + webhookAttempts.retry + webhookAttempts.failed;
  const reportedAttempts = reported.webhookAttempts.delivered + reported.webhookAttempts.retry + reported.webhookAttempts.failed;
  if (taken === reported.taken && messages === reported.messages && bytes === reported.bytes && attempts === reportedAttempts) return;
  reported = { taken, takenBytes, messages, bytes, webhookAttempts: { ...webhookAttempts } };
  post({ type: "load", ...reported });
}, REPORT_EVERY_MS);

port.on("message", (message: ToProcessing) => {
  if (message.type === "stop") {
    void stop();
    return;
  }
  for (const { rawId, size, received } of message.submissions) {
    taken++;
    takenBytes += size;
    // The bytes arrive as a plain Uint8Array (structured clone drops the Buffer prototype).
    const raw = received && Buffer.from(received.raw.buffer, received.raw.byteOffset, received.raw.byteLength);
    processor.submit(rawId, size, received && raw && { ...received, raw });
  }
});

async function stop(): Promise<void> {
  clearInterval(reporter);
  await sweeper.stop();
  await processor.stop();
  await parser.close();
  await outbox.drain();
  await temporal.connection.close();
  await db.close();
  post({ type: "stopped" });
}

post({ type: "ready" });
