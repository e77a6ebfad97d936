// Starts the real PostgreSQL and Temporal dev server once per test run, applies migrations, bundles the
// workflows once (or takes the bundle of a fresh dist/), and hands their addresses to every test file. The tools
// some files need (helm, hadolint, schemathesis, the Python mail tools) start installing in the background
// meanwhile when the tools directory lacks them, so their installs overlap the tests.
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorkflowCode } from "@temporalio/worker";
import type { TestProject } from "vitest/node";
import { buildIsFresh, DIST } from "../../src/cli/build.js";
import { MAILBOX_SEARCH_ATTRIBUTES } from "../../src/temporal/search-attributes.js";
import { migrateDatabase, openDatabase } from "../../src/db/database.js";
import { startEmbeddedPostgres } from "../../src/runtime/embedded-postgres.js";
import { ensureTemporalCli } from "../../src/runtime/temporal-cli.js";
import { toolsDir } from "../../src/runtime/tools-dir.js";
import { startTemporalDevServer } from "../../src/runtime/temporal-dev-server.js";
import { WORKFLOWS_PATH } from "../../src/temporal/worker.js";
import { startClamd, type ProvidedClamd } from "./clamd.js";
import { dropFileDatabaseTemplate, prepareFileDatabaseTemplate } from "./file-database.js";
import { recordServerPid } from "./slowest-files.js";
import { makeSmtpTlsSeed, TEST_MANAGED_DOMAIN, type SmtpTlsSeed } from "./smtp-tls-seed.js";
import { prefetchTools } from "./tools.js";

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    /** The migrated template that test/support/file-database.ts copies for files with a database of their own. */
    fileDatabaseTemplate: string;
    temporalAddress: string;
    workflowBundleCode: string;
    clamd: ProvidedClamd;
    /** The STARTTLS pair test smtp roles start with (test/support/smtp-tls-seed.ts). */
    smtpTlsSeed: SmtpTlsSeed;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Test processes trust the webhook receivers' test CA. Node reads NODE_EXTRA_CA_CERTS only at process start,
  // and the test forks start after this setup, inheriting its environment.
  process.env.NODE_EXTRA_CA_CERTS = fileURLToPath(new URL("../fixtures/webhook-tls/ca.pem", import.meta.url));
  // The files of this run (vitest has collected their paths before it sets up).
  const toolsPrefetched = prefetchTools(project.vitest.state.getPaths());
  const dataDir = await mkdtemp(join(tmpdir(), "mailbox-test-"));
  // The embedded PostgreSQL runs as an unprivileged user when the tests run as root: it must reach its data dir.
  await chmod(dataDir, 0o755);
  // npm test has just built dist/, workflow bundle included: that one serves when no source changed since. Else
  // bundling is CPU work while the servers start mostly wait: both at once.
  const bundling = buildIsFresh()
    ? readFile(join(DIST, "workflow-bundle.js"), "utf8").then((code) => ({ code }))
    : bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  bundling.catch(() => undefined); // awaited below; a failure is reported there, not as an unhandled rejection
  const [pg, temporal, clamd] = await Promise.all([
    process.env.DATABASE_URL ? undefined : startEmbeddedPostgres({ dataDir, settings: RUN_POSTGRES_SETTINGS }),
    (async () => {
      if (process.env.TEMPORAL_ADDRESS) return undefined;
      const cliPath = await ensureTemporalCli({ toolsDir: toolsDir() });
      return startTemporalDevServer({ cliPath, searchAttributes: MAILBOX_SEARCH_ATTRIBUTES, headless: true, env: RUN_TEMPORAL_ENV });
    })(),
    // A clamd that cannot start fails the scan tests with its reason, not every test of the run.
    startClamd(join(dataDir, "clamd")).catch((e: unknown) => (e instanceof Error ? e.message : String(e))),
  ]);
  // The postmaster may not stay below vitest's process; the reporter reads its CPU by pid.
  if (pg) recordServerPid("postgres", pg.pid);
  const databaseUrl = process.env.DATABASE_URL ?? pg!.url;
  const [fileDatabaseTemplate, smtpTlsSeed] = await Promise.all([
    prepareFileDatabaseTemplate(databaseUrl),
    makeSmtpTlsSeed(join(dataDir, "smtp-tls-seed"), TEST_MANAGED_DOMAIN),
    (async () => {
      const db = await openDatabase(databaseUrl);
      await migrateDatabase(db);
      await db.close();
    })(),
  ]);
  const bundle = await bundling;

  project.provide("databaseUrl", databaseUrl);
  project.provide("fileDatabaseTemplate", fileDatabaseTemplate);
  project.provide("temporalAddress", process.env.TEMPORAL_ADDRESS ?? temporal!.address);
  project.provide("workflowBundleCode", bundle.code);
  project.provide("smtpTlsSeed", smtpTlsSeed);
  project.provide("clamd", typeof clamd === "string" ? { failure: clamd } : { tcpAddress: clamd.tcpAddress, unixAddress: clamd.unixAddress, version: clamd.version });

  return async () => {
    await toolsPrefetched;
    // An external PostgreSQL (DATABASE_URL) keeps no template behind; an embedded one is removed whole.
    if (!pg) await dropFileDatabaseTemplate(databaseUrl, fileDatabaseTemplate);
    await temporal?.stop();
    await pg?.stop();
    if (typeof clamd !== "string") await clamd.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}

/**
 * The run's PostgreSQL keeps its data in the OS page cache instead of forcing it to the disk, at the cost of crash
 * safety for a crash of the machine or the kernel only, which no test causes: no test kills, stops or restarts this
 * cluster (the files that restart PostgreSQL or kill -9 `mailbox start` start clusters of their own, with the
 * service's durable defaults), and a process killed by a test loses nothing written to the page cache. Commits still
 * wait for their WAL to be written (synchronous_commit stays on), and the memory settings stay the defaults (the
 * memory tests count what the backends hold), so what a test observes is unchanged.
 */
const RUN_POSTGRES_SETTINGS = [
  "fsync=off", // no fsync per commit, checkpoint or WAL segment
  "full_page_writes=off", // no whole page into the WAL on a page's first change after each checkpoint
  "wal_init_zero=off", // a new WAL segment is not first written with zeros
  // Fewer checkpoints, so a page changed again and again is written out fewer times.
  "max_wal_size=2GB",
  "checkpoint_timeout=30min",
];

/**
 * The run's Temporal dev server collects its Go heap at 5x the live heap instead of 2x (GOGC=400): fewer collections
 * for the same work, at the cost of a larger heap. Nothing a test observes depends on it; Temporal servers that
 * tests restart or kill are their own, with the defaults.
 */
const RUN_TEMPORAL_ENV = { GOGC: "400" };

const quiet = () => undefined;
const quietLogger = { trace: quiet, debug: quiet, info: quiet, warn: quiet, error: console.error, log: quiet };
