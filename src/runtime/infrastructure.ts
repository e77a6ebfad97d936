// What the service runs on: an external PostgreSQL and Temporal when configured, otherwise embedded ones under
// DATA_DIR (the PostgreSQL binaries of the npm package, the Temporal CLI's dev server).
import { join } from "node:path";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { MAILBOX_SEARCH_ATTRIBUTES } from "../temporal/search-attributes.js";
import { startEmbeddedPostgres } from "./embedded-postgres.js";
import { ensureTemporalCli } from "./temporal-cli.js";
import { startTemporalDevServer } from "./temporal-dev-server.js";

export interface Infrastructure {
  readonly databaseUrl: string;
  readonly temporalAddress: string;
  readonly temporalUiUrl: string | null;
  stop(): Promise<void>;
}

/** External PostgreSQL and Temporal when configured; otherwise embedded ones under DATA_DIR. */
export async function startInfrastructure(config: Config, log: Logger): Promise<Infrastructure> {
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
