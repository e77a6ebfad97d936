// The smtp role: the SMTP listener, which receives and commits (commit 1) on this event loop, and the processing
// thread, which turns accepted mail into stored messages and recovers what a crashed process had accepted
// (processing.ts). Stopped in reverse: no new mail, then the work in hand.
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../logger.js";
import { createInboundHooks } from "../mail/inbound-hooks.js";
import { startSmtpServer } from "../mail/smtp-server.js";
import { loadTlsCertificate } from "../mail/tls-certificate.js";
import { createRecipientAdmission, type InboundDomains } from "./admission.js";
import { startProcessing } from "./processing.js";
import { createRawBodies, createReceiveMemory } from "./raw-body.js";
import { createRawMessageStore } from "./receive.js";
import { DEFAULT_SWEEPER_OPTIONS, type SweeperOptions } from "./sweeper.js";

export interface SmtpRoleDeps {
  readonly config: Config;
  readonly db: Database;
  readonly log: Logger;
  /** Where the processing thread connects (the embedded ones when the configuration names none). */
  readonly databaseUrl: string;
  readonly temporalAddress: string;
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
  const bodies = await createRawBodies(createReceiveMemory(smtp.receiveMemoryBytes), config.dataDir);
  const processing = await startProcessing({
    config,
    databaseUrl: deps.databaseUrl,
    temporalAddress: deps.temporalAddress,
    sweeper: deps.sweeper ?? DEFAULT_SWEEPER_OPTIONS,
    log,
  });
  const rawMessages = createRawMessageStore(db);
  const admission = createRecipientAdmission(db, config.managedDomain, deps.domains, config.feedbackAddress);
  const hooks = createInboundHooks({
    admit: admission.admit,
    bodies,
    store: (message) => rawMessages.store(message),
    storeSpooled: (envelope, file, size) => rawMessages.storeSpooled(envelope, file, size),
    accepted: (rawId, size, message) => processing.submit(rawId, size, message),
    overloaded: () => processing.overloaded(),
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
        maxConnectionsPerClient: smtp.maxConnectionsPerClient,
        maxRefusedRecipients: smtp.maxRefusedRecipients,
        refusalDelayAfter: smtp.refusalDelayAfter,
        refusalDelayMs: smtp.refusalDelayMs,
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
        await processing.stop();
      },
    };
  } catch (e) {
    await admission.close();
    await processing.stop();
    throw e;
  }
}
