// The operational endpoints every role serves: GET /healthz (the process lives), GET /readyz (what it depends on
// answers) and GET /metrics (Prometheus text). The API port answers them before its request pipeline (no key, no
// body, no rate limit), /metrics there only behind METRICS_TOKEN (the API port faces clients); STATUS_PORT answers
// all three in any role.
import { timingSafeEqual } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Database } from "../db/database.js";
import type { Logger } from "../logger.js";
import { singleFlight, type Metrics } from "./metrics.js";

/** One dependency readiness waits on; `check` rejects when it does not answer. */
export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<void>;
}

/** How long one check may take before it counts as failing (a probe's own timeout is typically 1–5 s). */
export const CHECK_TIMEOUT_MS = 2_000;

/** PostgreSQL answers a statement, and every migration this code knows is applied (remembered once true). */
export function databaseReadiness(db: Database): ReadinessCheck {
  let migrated = false;
  return {
    name: "database",
    async check() {
      await db.sql.query("select 1");
      if (migrated) return;
      const pending = await db.orm.migrator.getPending();
      if (pending.length > 0) throw new Error(`${pending.length} migrations are not applied`);
      migrated = true;
    },
  };
}

export interface Readiness {
  add(check: ReadinessCheck): void;
  /** Runs every check at once; each is "ok" or "failing". */
  run(): Promise<{ ready: boolean; checks: Record<string, "ok" | "failing"> }>;
}

export function createReadiness(log: Logger, checks: ReadinessCheck[] = []): Readiness {
  // Probes come every few seconds: a check's failure is logged when it starts and when it ends, not every time.
  const failing = new Set<string>();
  return {
    add: (check) => void checks.push(check),
    async run() {
      const results = await Promise.all(
        checks.map(async (c) => {
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
          });
          try {
            await Promise.race([c.check(), timeout]);
            if (failing.delete(c.name)) log.info("readiness check passes again", { check: c.name });
            return [c.name, "ok"] as const;
          } catch (error) {
            if (!failing.has(c.name)) log.warn("readiness check failing", { check: c.name, error });
            failing.add(c.name);
            return [c.name, "failing"] as const;
          } finally {
            clearTimeout(timer);
          }
        }),
      );
      return { ready: results.every(([, state]) => state === "ok"), checks: Object.fromEntries(results) };
    },
  };
}

export interface StatusDeps {
  readonly metrics: Metrics;
  readonly readiness: Readiness;
  /** When set, /metrics answers only requests with `Authorization: Bearer <token>` (METRICS_TOKEN). */
  readonly metricsToken: string | undefined;
}

export const STATUS_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * Answers a status path; false for any other path (the caller answers it). On the API port /metrics is served only
 * behind METRICS_TOKEN: without one it is not found there (STATUS_PORT serves it).
 */
export function createStatusHandler(deps: StatusDeps, port: "api" | "status"): (req: IncomingMessage, res: ServerResponse) => boolean {
  const token = deps.metricsToken === undefined ? undefined : Buffer.from(`Bearer ${deps.metricsToken}`);
  const metricsHere = port === "status" || token !== undefined;
  // No key is needed here, so however many ask at once, the checks and the scrape (a few statements each) run once
  // at a time.
  const readiness = singleFlight(() => deps.readiness.run());
  const scrape = singleFlight(() => deps.metrics.scrape());
  const authorized = (req: IncomingMessage) => {
    if (!token) return true;
    const given = Buffer.from(req.headers.authorization ?? "");
    return given.length === token.length && timingSafeEqual(given, token);
  };
  return (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0]!;
    if (!STATUS_PATHS.has(path)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      answer(req, res, 405, "text/plain; charset=utf-8", "method not allowed\n", { Allow: "GET, HEAD" });
      return true;
    }
    const done = (status: number, type: string, body: string, headers: Record<string, string> = {}) =>
      answer(req, res, status, type, body, { "Cache-Control": "no-store", ...headers });
    const failed = () => done(500, "text/plain; charset=utf-8", "internal error\n");
    if (path === "/healthz") done(200, "text/plain; charset=utf-8", "ok\n");
    else if (path === "/metrics" && !metricsHere) done(404, "text/plain; charset=utf-8", "not found\n");
    else if (path === "/readyz") {
      readiness().then(({ ready, checks }) => done(ready ? 200 : 503, "application/json", JSON.stringify({ ready, checks })), failed);
    } else if (!authorized(req)) done(401, "text/plain; charset=utf-8", "unauthorized\n", { "WWW-Authenticate": "Bearer" });
    else scrape().then((text) => done(200, deps.metrics.registry.contentType, text), failed);
    return true;
  };
}

function answer(req: IncomingMessage, res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string>): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { "Content-Type": type, "Content-Length": String(Buffer.byteLength(body)), "X-Content-Type-Options": "nosniff", ...headers });
  res.end(req.method === "HEAD" ? undefined : body);
}

export interface StatusServer {
  readonly port: number;
  close(): Promise<void>;
}

/** What the status port holds open: a probe or a scraper needs a few connections, nothing more. */
const STATUS_LIMITS = { maxConnections: 64, headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, maxHeaderSize: 8 * 1024 };

/** The status port (STATUS_PORT): the status paths and 404 for anything else. */
export async function startStatusServer(deps: StatusDeps, port: number, host: string): Promise<StatusServer> {
  const handle = createStatusHandler(deps, "status");
  const server = http.createServer(
    { headersTimeout: STATUS_LIMITS.headersTimeoutMs, requestTimeout: STATUS_LIMITS.requestTimeoutMs, maxHeaderSize: STATUS_LIMITS.maxHeaderSize },
    (req, res) => {
      if (!handle(req, res)) answer(req, res, 404, "text/plain; charset=utf-8", "not found\n", {});
    },
  );
  server.maxConnections = STATUS_LIMITS.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
