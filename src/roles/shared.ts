// What the roles of one process share, built once by the composition root and handed to each role that needs it.
import type { Client } from "@temporalio/client";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { DnsResolver } from "../dns/resolver.js";
import { createConfiguredResolver } from "../dns/servers.js";
import type { DomainCapabilities } from "../domains/capabilities.js";
import { createConfiguredCapabilities, createConfiguredVerifier } from "../domains/setup.js";
import type { DomainVerifier } from "../domains/verifier.js";
import { createLogger, type Logger } from "../logger.js";
import { createMetrics, type Metrics } from "../metrics/metrics.js";
import { createReadiness, databaseReadiness, type Readiness } from "../metrics/status.js";
import { temporalReadiness } from "../temporal/readiness.js";

/**
 * One logger, one DNS resolver (asked afresh: verification and delivery; validation wraps it in a cache of its
 * own), one domain verifier and capability checker (one re-check per domain at a time in the process), one metrics
 * registry and one readiness list (each role adds what it needs).
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
