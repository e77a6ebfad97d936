// The smtp role: the SMTP listener, which receives and commits (commit 1) on this event loop, and the processing
// thread, which turns accepted mail into stored messages and recovers what a crashed process had accepted
// (src/inbound/processing.ts, with the thread's body in smtp-processing-thread.ts). Stopped in reverse: no new mail,
// then the work in hand.
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../logger.js";
import { singleFlight, type Metrics } from "../metrics/metrics.js";
import { createInboundHooks } from "../mail/inbound-hooks.js";
import { startSmtpServer } from "../mail/smtp-server.js";
import { loadTlsCertificate } from "../mail/tls-certificate.js";
import { createRecipientAdmission, type InboundDomains } from "../inbound/admission.js";
import type { InFlowStats } from "../inbound/in-flow.js";
import { startProcessing, type Processing } from "../inbound/processing.js";
import { createRawBodies, createReceiveMemory } from "../inbound/raw-body.js";
import { createRawMessageStore } from "../inbound/receive.js";
import { DEFAULT_SWEEPER_OPTIONS, type SweeperOptions } from "../inbound/sweeper.js";
import { drainGraceMs } from "../runtime/drain.js";

/**
 * The processing thread's entry: from the build, its body; from the sources, the build's body when dist/ is fresh,
 * else the sources through tsx (src/roles/smtp-processing-thread.js).
 */
const PROCESSING_THREAD = new URL("./smtp-processing-thread.js", import.meta.url);

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
  /** SMTP sessions, replies and the processing backlog are recorded here. */
  readonly metrics?: Metrics;
}

export interface SmtpRole {
  readonly port: number;
  /** Whether the listener accepts connections (readiness). */
  listening(): boolean;
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
    entry: PROCESSING_THREAD,
    config,
    databaseUrl: deps.databaseUrl,
    temporalAddress: deps.temporalAddress,
    sweeper: deps.sweeper ?? DEFAULT_SWEEPER_OPTIONS,
    log,
    ...(deps.metrics ? { webhookMetrics: deps.metrics.webhooks } : {}),
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
    admitTransaction: () => processing.admit(),
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
        proxyTrusted: smtp.proxyTrusted,
        log,
        ...(deps.metrics ? { metrics: deps.metrics.smtp } : {}),
      },
      hooks,
      config.smtpPort,
      config.bindHost,
    );
    const unregister = deps.metrics ? backlogGauges(deps.metrics, db, processing) : () => undefined;
    return {
      port: server.port,
      listening: server.listening,
      async stop() {
        unregister();
        await server.close(drainGraceMs(config.shutdownTimeoutMs));
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

/**
 * The inbound backlog: what this process accepted and has not stored yet (the processing thread's queue), and what
 * every process has left pending in PostgreSQL with the age of the oldest (one index range read per scrape).
 */
function backlogGauges(metrics: Metrics, db: Database, processing: Processing): () => void {
  // Both gauges of one scrape share one query.
  const pending = singleFlight(async () => {
    const [row] = await db.sql.query<{ n: number; age: number }>(
      `select count(*)::int as n, coalesce(extract(epoch from now() - min(received_at)), 0)::float8 as age
         from inbound_raw_messages where status = 'pending'`,
    );
    return row!;
  });
  const unregister = [
    metrics.gauge("mailbox_inbound_backlog_messages", "Accepted messages this process has not stored yet.", [], () => [
      { value: processing.backlog().messages },
    ]),
    metrics.gauge("mailbox_inbound_backlog_bytes", "Raw bytes of the accepted messages this process has not stored yet.", [], () => [
      { value: processing.backlog().bytes },
    ]),
    ...inFlowGauges(metrics, processing),
    metrics.gauge("mailbox_inbound_pending_messages", "Accepted messages pending processing in the database, of every process.", [], async () => [
      { value: (await pending()).n },
    ]),
    metrics.gauge("mailbox_inbound_oldest_pending_seconds", "Age of the oldest accepted message pending processing, of every process.", [], async () => [
      { value: (await pending()).age },
    ]),
  ];
  return () => unregister.forEach((u) => u());
}

/** What the in-flow delay holds back: counts since the process started (use rate()), and the transactions waiting now. */
function inFlowGauges(metrics: Metrics, processing: Processing): (() => void)[] {
  const read = (pick: (stats: InFlowStats) => number) => () => {
    const stats = processing.inFlow();
    return stats ? [{ value: pick(stats) }] : [];
  };
  return [
    metrics.gauge(
      "mailbox_inbound_inflow_delayed_transactions",
      "Transactions delayed at MAIL FROM by the in-flow delay since the process started (counted as each wait ends).",
      [],
      read((s) => s.delayed),
    ),
    metrics.gauge("mailbox_inbound_inflow_delay_seconds", "Seconds transactions waited at MAIL FROM for the in-flow delay since the process started.", [], read((s) => s.delaySeconds)),
    metrics.gauge("mailbox_inbound_inflow_waiting_transactions", "Transactions waiting at MAIL FROM for the in-flow delay now.", [], read((s) => s.waiting)),
  ];
}
