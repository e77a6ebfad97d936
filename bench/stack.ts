// The stack under test: PostgreSQL and Temporal (embedded unless DATABASE_URL / TEMPORAL_ADDRESS are set), and the
// two HTTP servers compared, each in its own process so none shares the load generator's event loop.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import { MAILBOX_SEARCH_ATTRIBUTES } from "../src/temporal/search-attributes.js";
import { startEmbeddedPostgres } from "../src/runtime/embedded-postgres.js";
import { ensureTemporalCli } from "../src/runtime/temporal-cli.js";
import { startTemporalDevServer } from "../src/runtime/temporal-dev-server.js";
import { toolsDir } from "../src/runtime/tools-dir.js";
import { startDnsServer } from "../test/support/dns-server.js";

/** Teardown steps, run newest first; every step runs even when an earlier one fails. */
export class Teardown {
  private readonly steps: (() => Promise<unknown>)[] = [];

  add(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }

  async run(): Promise<void> {
    while (this.steps.length > 0) {
      await this.steps.pop()!().catch((e: unknown) => console.error(`teardown: ${e instanceof Error ? e.message : String(e)}`));
    }
  }
}

export interface Infrastructure {
  readonly databaseUrl: string;
  readonly temporalAddress: string;
  /** The postmaster's pid when PostgreSQL is embedded (for CPU accounting), else undefined. */
  readonly postmasterPid: number | undefined;
  /** Stops the embedded PostgreSQL (fast shutdown) and starts it again on its port and data; undefined when external. */
  readonly restartPostgres: (() => Promise<void>) | undefined;
  /** Stops the embedded Temporal dev server and starts it again on its port; undefined when external. */
  readonly restartTemporal: (() => Promise<void>) | undefined;
  /** The roles' DNS_SERVERS: the bench's own resolver on loopback (see BENCH_SENDER_DOMAIN). */
  readonly dnsServers: string;
}

/** The domain the load generators send from; the bench's resolver publishes its SPF and DMARC records. */
export const BENCH_SENDER_DOMAIN = "load.localhost";

/**
 * A resolver on loopback for the roles, as a production deployment has one next to it: it answers the senders'
 * SPF and DMARC questions with 5-minute TTLs and everything else NXDOMAIN with a 5-minute negative TTL. Without it
 * every message's sender authentication went to the machine's resolver, which here answers NXDOMAIN without a TTL
 * (nothing to cache) and drops most of a burst of questions (200 of 300 at once timed out): storing then measured
 * that resolver (~30 msg/s), not the service.
 */
async function startBenchResolver(teardown: Teardown): Promise<string> {
  const dns = await startDnsServer();
  dns.negativeTtl = 300;
  dns.set(BENCH_SENDER_DOMAIN, [{ type: "TXT", text: "v=spf1 ip4:127.0.0.0/8 ip6:::1 -all" }], 300);
  dns.set(`_dmarc.${BENCH_SENDER_DOMAIN}`, [{ type: "TXT", text: "v=DMARC1; p=none" }], 300);
  teardown.add(() => dns.stop());
  return dns.serverList;
}

export interface InfrastructureOptions {
  /** The Temporal dev server keeps its state under the data directory (a restart keeps the workflows); in memory by default. */
  readonly persistentTemporal?: boolean;
  /** Embedded servers even when DATABASE_URL or TEMPORAL_ADDRESS name external ones (a benchmark that restarts them). */
  readonly embedded?: boolean;
}

interface Restartable<T> {
  readonly value: T;
  readonly pid: number | undefined;
  /** Undefined for an external server. */
  readonly restart: (() => Promise<void>) | undefined;
}

export async function startInfrastructure(dataDir: string, teardown: Teardown, options: InfrastructureOptions = {}): Promise<Infrastructure> {
  const external = (value: string): Restartable<string> => ({ value, pid: undefined, restart: undefined });
  const databaseUrl = options.embedded ? undefined : process.env["DATABASE_URL"];
  const temporalAddress = options.embedded ? undefined : process.env["TEMPORAL_ADDRESS"];
  const [pg, temporal, dnsServers] = await Promise.all([
    databaseUrl ? external(databaseUrl) : startPostgres(dataDir, teardown),
    temporalAddress ? external(temporalAddress) : startTemporal(options.persistentTemporal ? dataDir : undefined, teardown),
    startBenchResolver(teardown),
  ]);
  return {
    dnsServers,
    databaseUrl: pg.value,
    temporalAddress: temporal.value,
    postmasterPid: pg.pid,
    restartPostgres: pg.restart,
    restartTemporal: temporal.restart,
  };
}

async function startPostgres(dataDir: string, teardown: Teardown): Promise<Restartable<string>> {
  let pg = await startEmbeddedPostgres({ dataDir });
  const port = Number(new URL(pg.url).port);
  teardown.add(() => pg.stop());
  return {
    value: pg.url,
    pid: pg.pid,
    restart: async () => {
      await pg.stop();
      pg = await startEmbeddedPostgres({ dataDir, port });
    },
  };
}

async function startTemporal(dataDir: string | undefined, teardown: Teardown): Promise<Restartable<string>> {
  const cliPath = await ensureTemporalCli({ toolsDir: toolsDir() });
  const options = { cliPath, dataDir, headless: true, searchAttributes: MAILBOX_SEARCH_ATTRIBUTES };
  let temporal = await startTemporalDevServer(options);
  const port = Number(temporal.address.split(":").pop());
  teardown.add(() => temporal.stop());
  return {
    value: temporal.address,
    pid: undefined,
    restart: async () => {
      await temporal.stop();
      temporal = await startTemporalDevServer({ ...options, port });
    },
  };
}

/**
 * What every role of ours started by a benchmark gets: the stack's PostgreSQL and Temporal, ports of its own on
 * loopback, errors-only logs (LOG_LEVEL overrides) and fresh secrets.
 */
export function roleEnv(infra: Infrastructure): Record<string, string> {
  return {
    DATABASE_URL: infra.databaseUrl,
    TEMPORAL_ADDRESS: infra.temporalAddress,
    DNS_SERVERS: infra.dnsServers,
    HTTP_PORT: "0",
    SMTP_PORT: "0",
    BIND_HOST: "127.0.0.1",
    LOG_LEVEL: process.env["LOG_LEVEL"] || "error",
    CURSOR_SECRET: randomBytes(32).toString("base64url"),
    DKIM_KEY_SECRET: randomBytes(32).toString("base64url"),
  };
}

export interface ServerProcess {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
}

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

/**
 * Spawns a server that prints one JSON line holding its URL in `api` on stdout, as `mailbox serve` does.
 * `nodeArgs` go before the script (e.g. --cpu-prof).
 */
export async function startServer(
  name: string,
  script: readonly string[],
  env: Readonly<Record<string, string>>,
  nodeArgs: readonly string[],
  teardown: Teardown,
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...nodeArgs, ...script], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  teardown.add(() => stopChild(child));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    child.once("exit", (code) => reject(new Error(`${name} exited with code ${code} before listening`)));
    createInterface({ input: child.stdout! }).once("line", (line) => {
      clearTimeout(timer);
      try {
        resolveUrl(String((JSON.parse(line) as { api: unknown }).api));
      } catch {
        reject(new Error(`${name} printed an unexpected first line: ${line}`));
      }
    });
  });
  return { name, url, pid: child.pid! };
}

/** SIGTERM (both servers shut down in order and write CPU profiles then), SIGKILL after a grace period. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const escalate = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(escalate);
}
