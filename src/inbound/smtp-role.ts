// The smtp role: the SMTP listener, the processor that turns accepted mail into stored messages, and the sweeper
// that recovers what a crashed process had accepted. Stopped in reverse: no new mail, then the work in hand.
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../logger.js";
import { createInboundHooks } from "../mail/inbound-hooks.js";
import { createEmailParser } from "../mail/parse.js";
import { startSmtpServer } from "../mail/smtp-server.js";
import { loadTlsCertificate } from "../mail/tls-certificate.js";
import { createConfiguredFeedbackReports } from "../outbound/feedback-reports.js";
import { createRecipientAdmission, type InboundDomains } from "./admission.js";
import type { AttachmentScanStarter, MessageReceivedOutbox } from "./ports.js";
import { createInboundProcessor } from "./processor.js";
import { createRawMessageStore } from "./receive.js";
import { DEFAULT_SWEEPER_OPTIONS, startInboundSweeper, type SweeperOptions } from "./sweeper.js";

/** Messages in processing per parser thread. */
const PROCESSING_PER_PARSER = 4;

export interface SmtpRoleDeps {
  readonly config: Config;
  readonly db: Database;
  readonly log: Logger;
  readonly outbox: MessageReceivedOutbox;
  readonly scans: AttachmentScanStarter;
  /** Inbound capability of customer domains (src/domains). */
  readonly domains: InboundDomains;
  readonly sweeper?: SweeperOptions;
}

export interface SmtpRole {
  readonly port: number;
  stop(): Promise<void>;
}

export async function startSmtpRole(deps: SmtpRoleDeps): Promise<SmtpRole> {
  const { config, db, log } = deps;
  const { smtp } = config;
  const tls = await loadTlsCertificate({
    certPath: smtp.tlsCertPath,
    keyPath: smtp.tlsKeyPath,
    dataDir: config.dataDir,
    hostname: smtp.hostname,
  });
  const parser = createEmailParser({
    timeoutMs: config.inbound.parseTimeoutMs,
    memoryMb: config.inbound.parseMemoryMb,
    workers: config.inbound.concurrency,
    maxHeaderBytes: smtp.maxHeaderBytes,
    maxMimeParts: smtp.maxMimeParts,
  });
  const processor = createInboundProcessor({
    db,
    parser,
    outbox: deps.outbox,
    scans: deps.scans,
    log,
    hostname: smtp.hostname,
    // Parsing is bounded by the parser's threads; the rest of processing waits on the database, so more messages
    // are in flight than there are parsers (their parses queue for a free thread).
    concurrency: config.inbound.concurrency * PROCESSING_PER_PARSER,
    feedbackReports: createConfiguredFeedbackReports(config, db, log),
  });
  const sweeper = startInboundSweeper(db, processor, log, deps.sweeper ?? DEFAULT_SWEEPER_OPTIONS);
  const stopProcessing = async () => {
    await sweeper.stop();
    await processor.stop();
    await parser.close();
  };
  const rawMessages = createRawMessageStore(db);
  const admission = createRecipientAdmission(db, config.managedDomain, deps.domains, config.feedbackAddress);
  const hooks = createInboundHooks({
    admit: admission.admit,
    store: (message) => rawMessages.store(message),
    // A message the processor's queue has no room for waits in the database for the sweeper.
    accepted: (rawId, message) => void processor.submit(rawId, message),
    limits: {
      maxMessageBytes: config.platformLimits.messageContentBytes,
      maxRecipients: smtp.maxRecipients,
      maxHeaderBytes: smtp.maxHeaderBytes,
      maxMimeDepth: smtp.maxMimeDepth,
      maxMimeParts: smtp.maxMimeParts,
    },
  });
  try {
    const server = await startSmtpServer(
      {
        hostname: smtp.hostname,
        tls,
        maxConnections: smtp.maxConnections,
        idleTimeoutMs: smtp.idleTimeoutMs,
        sessionTimeoutMs: smtp.sessionTimeoutMs,
        maxMessageBytes: config.platformLimits.messageContentBytes,
        log,
      },
      hooks,
      config.smtpPort,
      config.bindHost,
    );
    return {
      port: server.port,
      async stop() {
        await server.close();
        await admission.close();
        await stopProcessing();
      },
    };
  } catch (e) {
    await admission.close();
    await stopProcessing();
    throw e;
  }
}
