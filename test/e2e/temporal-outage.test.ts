// A delete or a verify whose commit happened answers success when Temporal cannot start its workflow, and the
// worker's reconcilers start that workflow later on the real Temporal. The outage is real: a second API process
// (in-process) whose Temporal address refuses connections, or takes them and never answers.
import { createServer, type Server, type Socket } from "node:net";
import { Client, Connection, WorkflowNotFoundError } from "@temporalio/client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ApiServer } from "../../src/api-server.js";
import { domainVerificationReconciler } from "../../src/domains/verification-reconciler.js";
import { createLogger } from "../../src/logger.js";
import { startApi } from "../../src/roles/api.js";
import {
  createDomainVerificationStarter,
  createInboxPurgeStarter,
  domainVerificationWorkflowId,
  inboxPurgeWorkflowId,
} from "../../src/temporal/client.js";
import { purgeReconciler } from "../../src/inboxes/purge-reconciler.js";
import { reconcile } from "../../src/jobs/periodic-jobs.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

const REFRESH_MS = 1000;

let dns: TestDnsServer;
let database: FileDatabase;
let app: TestApp;
beforeAll(async () => {
  dns = await startDnsServer();
  // A database of this file's own: the inboxes it deletes and the domains it verifies wait, on purpose, for this
  // file's reconcilers, and the worker roles other files start on the run's database would start their workflows
  // first (their reconcilers read every deleting inbox and unchecked domain of the database they serve).
  database = await createFileDatabase();
  app = await startTestApp({
    DATABASE_URL: database.url,
    DNS_SERVERS: dns.serverList,
    DNS_TIMEOUT_MS: "100",
    DOMAIN_VERIFY_REFRESH: `${REFRESH_MS}ms`,
  });
});
afterAll(async () => {
  await app?.stop();
  await database?.drop();
  await dns?.stop();
});

/** A port nothing listens on: connections are refused, as when Temporal is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A port that takes connections and never answers, as a hung Temporal or a black-holed route does. */
async function silentServer(): Promise<{ port: number; stop(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The API with a Temporal client of its own at `address`, which it cannot reach. */
async function apiWithTemporalAt(address: string): Promise<{ baseUrl: string; stop(): Promise<void> }> {
  const connection = Connection.lazy({ address });
  const api: ApiServer = await startApi(app.config, app.db, new Client({ connection, namespace: app.config.temporalNamespace }), createLogger("error"));
  return {
    baseUrl: `http://127.0.0.1:${api.port}`,
    async stop() {
      await api.close();
      await connection.close();
    },
  };
}

async function call(baseUrl: string, tenant: Tenant, method: string, path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(baseUrl + path, { method, headers: { "x-api-key": tenant.key } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : text };
}

async function workflowExists(workflowId: string): Promise<boolean> {
  try {
    await app.temporal.workflow.getHandle(workflowId).describe();
    return true;
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return false;
    throw e;
  }
}

interface Starter {
  start(target: { readonly id: string; readonly organizationId: string }): Promise<void>;
}

/** The real starter, for this test's own id only: the reconcilers look at every organization's rows. */
function only(id: string, starter: Starter): Starter & { started: string[] } {
  const started: string[] = [];
  return {
    started,
    async start(target) {
      if (target.id !== id) return;
      started.push(target.id);
      await starter.start(target);
    },
  };
}

describe.each([
  ["refuses connections", async () => ({ address: `127.0.0.1:${await closedPort()}`, stop: async () => undefined })],
  [
    "takes connections and never answers",
    async () => {
      const silent = await silentServer();
      return { address: `127.0.0.1:${silent.port}`, stop: silent.stop };
    },
  ],
])("when Temporal %s", (_, outage) => {
  let down: { address: string; stop(): Promise<void> };
  let api: { baseUrl: string; stop(): Promise<void> };
  beforeAll(async () => {
    down = await outage();
    api = await apiWithTemporalAt(down.address);
  });
  afterAll(async () => {
    await api?.stop();
    await down?.stop();
  });

  test("an inbox delete answers 204, and the purge reconciler purges the inbox later", async () => {
    const tenant = await app.createTenant();
    const inboxId = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("outage"), displayName: "O" } })).body.id;
    const deleted = await call(api.baseUrl, tenant, "DELETE", `/v1/inboxes/${inboxId}`);
    expect(deleted).toEqual({ status: 204, body: "" });
    expect((await tenant.request("GET", `/v1/inboxes/${inboxId}`)).status).toBe(404);
    expect(await workflowExists(inboxPurgeWorkflowId(inboxId))).toBe(false);

    const worker = await app.startWorker();
    try {
      const purges = only(inboxId, createInboxPurgeStarter(app.temporal, app.config.temporalTaskQueue, 10));
      await reconcile(purgeReconciler(app.db, purges));
      expect(purges.started).toEqual([inboxId]);
      await app.temporal.workflow.getHandle(inboxPurgeWorkflowId(inboxId)).result();
      const [row] = await app.db.sql.query<{ status: string }>("select status from inboxes where id = $1", [inboxId]);
      expect(row!.status).toBe("deleted");
    } finally {
      await worker.stop();
    }
  });

  test("a domain verify answers 200 with its checks, and the verification reconciler starts the re-check workflow", async () => {
    const tenant = await app.createTenant();
    const domain = (await tenant.request("POST", "/v1/domains", { body: { domain: `${uniqueName("outage")}.example` } })).body;
    const verified = await call(api.baseUrl, tenant, "POST", `/v1/domains/${domain.id}/verify`);
    expect(verified.status).toBe(200);
    expect(verified.body.capabilities).toEqual({ inbound: false, outbound: false });
    expect(await workflowExists(domainVerificationWorkflowId(domain.id))).toBe(false);
    const checkedAt = Date.parse(verified.body.checkedAt);

    const worker = await app.startWorker();
    try {
      const workflows = only(domain.id, createDomainVerificationStarter(app.temporal, app.config.temporalTaskQueue));
      // Within its refresh age a domain needs no workflow yet: the reconciler leaves it.
      await reconcile(domainVerificationReconciler(app.db, workflows, 60 * 60_000));
      expect(workflows.started).toEqual([]);
      // A round once its check is overdue (the refresh age and then the reconciler's margin have passed).
      await reconcile(domainVerificationReconciler(app.db, workflows, REFRESH_MS, () => new Date(Date.now() + REFRESH_MS + 2 * 60_000)));
      expect(workflows.started).toEqual([domain.id]);
      expect((await app.temporal.workflow.getHandle(domainVerificationWorkflowId(domain.id)).describe()).status.name).toBe("RUNNING");
      // The workflow re-checks the records on its own from now on.
      await eventually(async () => {
        const traffic = await tenant.request("GET", `/v1/domains/${domain.id}/traffic`);
        return Date.parse(traffic.body.inbound.lastCheckedAt) > checkedAt ? true : undefined;
      });
    } finally {
      await worker.stop();
    }
  });
});
