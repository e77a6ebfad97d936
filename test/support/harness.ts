// An in-process service for tests: the real API server and (optionally) a real Temporal worker, on the shared
// PostgreSQL and Temporal of the run. Each test makes its own organizations, so tests never share data.
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client as RpcClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type { Client } from "@temporalio/client";
import { inject } from "vitest";
import { getCurrentTest } from "vitest/suite";
import { issueKey, type KeyRestrictions } from "../../src/admin/api-keys.js";
import { createOrganization, type OrganizationLimits } from "../../src/admin/organizations.js";
import type { ApiServer } from "../../src/api-server.js";
import { loadConfig, type Config } from "../../src/config.js";
import { openDatabase, type Database } from "../../src/db/database.js";
import { createLogger } from "../../src/logger.js";
import { startApi } from "../../src/roles/api.js";
import { createSharedDeps } from "../../src/roles/shared.js";
import { runConfiguredWorker, type RunningWorker } from "../../src/roles/worker.js";
import { connectTemporal } from "../../src/temporal/client.js";
import { startSmtpRole, type SmtpRole } from "../../src/roles/smtp.js";
import type { SweeperOptions } from "../../src/inbound/sweeper.js";
import { uniqueName } from "./names.js";
import { seedSmtpTls, TEST_MANAGED_DOMAIN } from "./smtp-tls-seed.js";

export interface TestApp {
  readonly baseUrl: string;
  readonly config: Config;
  readonly db: Database;
  readonly temporal: Client;
  createTenant(options?: TenantOptions): Promise<Tenant>;
  /**
   * Starts a worker on this app's task queue, with the delivery queue's dispatcher (tests that need one start it
   * themselves).
   */
  startWorker(): Promise<{ stop(): Promise<void> }>;
  /**
   * Starts the smtp role in this process on a free port (stopped with the app). Its processing thread reports as in
   * production, to this app's webhook endpoints and scan workflows: tests observe the database and Temporal.
   */
  startSmtp(options?: { sweeper?: SweeperOptions }): Promise<SmtpRole>;
  stop(): Promise<void>;
}

export interface TenantOptions extends OrganizationLimits {
  readonly scopes?: string[];
  readonly restrictions?: KeyRestrictions;
}

export interface Tenant {
  readonly organizationId: string;
  readonly keyId: string;
  readonly key: string;
  /** A JSON request with this tenant's key (override with headers["x-api-key"]). */
  request(method: string, path: string, options?: { body?: unknown; headers?: Record<string, string> }): Promise<JsonResponse>;
  /** A typed Connect client (HTTP/1.1) with this tenant's key. */
  connect<S extends DescService>(service: S): RpcClient<S>;
  /** A typed gRPC client (h2c) with this tenant's key. */
  grpc<S extends DescService>(service: S): RpcClient<S>;
  /** A typed gRPC-Web client (HTTP/1.1) with this tenant's key. */
  grpcWeb<S extends DescService>(service: S): RpcClient<S>;
  /** Issues another key for this organization. */
  issueKey(restrictions: KeyRestrictions & { scopes: string[] }): Promise<{ id: string; key: string }>;
}

export interface JsonResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
}

export { uniqueName } from "./names.js";

/**
 * The sweeper of a test's smtp role leaves other test files' pending rows alone: the database is shared by the whole
 * run, and adopting another file's backlog (a crash test's, the memory test's 9 MB messages) would count against this
 * role's limits and make tests depend on each other. Tests of the sweeper pass options of their own.
 */
const TEST_SWEEPER: SweeperOptions = { intervalMs: 60_000, staleAfterMs: 24 * 3_600_000 };

export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const config = loadConfig({
    DATABASE_URL: inject("databaseUrl"),
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    HTTP_PORT: "0",
    SMTP_PORT: "0",
    DATA_DIR: await mkdtemp(join(tmpdir(), "mailbox-app-")),
    CURSOR_SECRET: randomBytes(32).toString("hex"),
    TEMPORAL_TASK_QUEUE: uniqueName("test"),
    MANAGED_DOMAIN: TEST_MANAGED_DOMAIN,
    LOG_LEVEL: "error",
    KEY_CACHE_MS: "0",
    ...env,
  });
  // Sections loadConfig does not compose yet (issue 17's uploads: UPLOAD_TTL, LIMIT_UPLOAD_STORAGE_BYTES, ...).
  const db = await openDatabase(config.databaseUrl!, { poolMax: 10 });
  const temporal = await connectTemporal(config.temporalAddress!, config.temporalNamespace);
  const log = createLogger(config.logLevel);
  // One process's shared parts, as the composition root builds them: the app's /metrics counts its worker and smtp role too.
  const shared = createSharedDeps(config, db, temporal, log);
  const api: ApiServer = await startApi(config, db, temporal, log, shared);
  const baseUrl = `http://127.0.0.1:${api.port}`;
  const workers: RunningWorker[] = [];
  const smtpRoles: SmtpRole[] = [];

  async function request(key: string, method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { "x-api-key": key, ...options.headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["content-type"] ??= "application/json";
      body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
    }
    const res = await fetch(baseUrl + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get("content-type") ?? "").startsWith("application/json")) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed };
  }

  return {
    baseUrl,
    config,
    db,
    temporal,
    async createTenant(options = {}) {
      const em = db.fork();
      const org = await createOrganization(em, config.defaults, { name: uniqueName("org"), ...options });
      const issue = async (restrictions: KeyRestrictions & { scopes: string[] }) => {
        const { key, secret } = await issueKey(db.fork(), config.defaults, org.id, restrictions);
        return { id: key.id, key: secret };
      };
      const first = await issue({ scopes: options.scopes ?? ["*"], ...options.restrictions });
      const interceptor = (next: any) => (req: any) => {
        if (!req.header.has("x-api-key")) req.header.set("x-api-key", first.key);
        return next(req);
      };
      return {
        organizationId: org.id,
        keyId: first.id,
        key: first.key,
        request: (method, path, opts) => request(first.key, method, path, opts),
        connect: (service) =>
          createClient(service, createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [interceptor] })),
        grpc: (service) => createClient(service, createGrpcTransport({ baseUrl, interceptors: [interceptor] })),
        grpcWeb: (service) =>
          createClient(service, createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors: [interceptor] })),
        issueKey: issue,
      };
    },
    async startWorker() {
      const worker = await runConfiguredWorker(config, db, config.temporalAddress!, { workflowBundle: { code: inject("workflowBundleCode") }, shared });
      workers.push(worker);
      return { stop: worker.stop };
    },
    async startSmtp(options = {}) {
      await seedSmtpTls(config.dataDir, config.smtp.hostname);
      const role = await startSmtpRole({
        config,
        db,
        log,
        domains: shared.capabilities,
        metrics: shared.metrics,
        databaseUrl: config.databaseUrl!,
        temporalAddress: config.temporalAddress!,
        sweeper: options.sweeper ?? TEST_SWEEPER,
      });
      smtpRoles.push(role);
      return role;
    },
    async stop() {
      await Promise.all(smtpRoles.map((r) => r.stop()));
      await Promise.all(workers.map((w) => w.stop()));
      await api.close();
      await temporal.connection.close();
      await db.close();
    },
  };
}

/** What a wait without a timeout of its own is given at least (all of it outside a test). */
const EVENTUALLY_MS = 20_000;

/**
 * Polls until check returns a value other than undefined, or fails after timeoutMs. Without one, a wait inside a
 * test may take what the test was given, up to shortly before its timeout (at least 20 s): a loaded machine slows
 * the work, not the event, and a wait that fails by itself (rather than the test timing out) lets the test's finally
 * blocks release what it holds before the file's afterAll runs. A test that timed out ends the wait at once.
 */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs?: number): Promise<T> {
  const test = getCurrentTest();
  const started = Date.now();
  const deadline = started + (timeoutMs ?? Math.max(EVENTUALLY_MS, testDeadline(test) - started));
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (test?.context.signal.aborted) throw new Error(`condition not met before the test timed out (waited ${Date.now() - started} ms)`);
    if (Date.now() > deadline) throw new Error(`condition not met in time (waited ${Date.now() - started} ms)`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Shortly before the test times out (its start is taken before its beforeEach hooks, so a little early). */
function testDeadline(test: ReturnType<typeof getCurrentTest>): number {
  const startTime = test?.result?.startTime;
  if (test === undefined || startTime === undefined || !(test.timeout > 0) || !Number.isFinite(test.timeout)) return 0;
  return startTime + test.timeout - Math.max(1_000, test.timeout / 20);
}
