// External Temporal and PostgreSQL behind TLS, as a Temporal cluster (mTLS), Temporal Cloud (API key) or a managed
// PostgreSQL present themselves: TLS-terminating proxies with a CA made here stand in front of the test run's
// servers, and real `serve --role` processes reach them only through the proxies.
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NativeConnection } from "@temporalio/worker";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { Message } from "../../src/db/entities/index.js";
import { temporalConnectOptions } from "../../src/temporal/access.js";
import { connectTemporal, inboxPurgeWorkflowId } from "../../src/temporal/client.js";
import { createFileDatabase, type FileDatabase } from "../support/file-database.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { serveRole, serveRoleFailure, type RoleProcess } from "../support/role-process.js";
import { RawSmtpClient, transaction } from "../support/smtp-client.js";
import { createTestCa, type Issued, type TestCa } from "../support/test-pki.js";
import { startTlsProxy, type TlsProxy } from "../support/tls-proxy.js";

let database: FileDatabase;
let app: TestApp;
let pki: TestCa;
let otherCa: TestCa;
let clientCert: Issued;
let temporalProxy: TlsProxy;
let pgProxy: TlsProxy;
const processes: RoleProcess[] = [];

const hostPort = (address: string) => {
  const [host, port] = address.split(":");
  return { host: host!, port: Number(port) };
};

beforeAll(async () => {
  // A worker role reconciles the whole database: this file's own keeps it off other files' submissions.
  database = await createFileDatabase();
  app = await startTestApp({ DATABASE_URL: database.url });
  [pki, otherCa] = await Promise.all([createTestCa("mailbox test ca"), createTestCa("someone else")]);
  clientCert = await pki.client("mailbox-worker");
  const server = await pki.server(["temporal.test", "localhost", "127.0.0.1"]);
  const pg = new URL(database.url);
  [temporalProxy, pgProxy] = await Promise.all([
    startTlsProxy({ target: hostPort(inject("temporalAddress")), server, clientCa: pki.ca }),
    startTlsProxy({ target: { host: pg.hostname, port: Number(pg.port) }, server, postgres: true }),
  ]);
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill("SIGKILL")));
  await temporalProxy?.stop();
  await pgProxy?.stop();
  await app?.stop();
  await database?.drop();
});

/** DATABASE_URL through the PostgreSQL TLS proxy, with the URL's own query (sslmode, sslrootcert) when given. */
function pgProxyUrl(query = ""): string {
  const url = new URL(database.url);
  url.hostname = "localhost";
  url.port = String(pgProxy.port);
  url.search = query;
  return url.toString();
}

/** The environment of a role that reaches both servers only through the proxies, over verified TLS. */
async function externalEnv(overrides: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    DATABASE_URL: pgProxyUrl(`sslmode=verify-full&sslrootcert=${encodeURIComponent(pki.ca)}`),
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalProxy.port}`,
    TEMPORAL_TLS_CA: pki.ca,
    TEMPORAL_TLS_CERT: clientCert.cert,
    TEMPORAL_TLS_KEY: clientCert.key,
    TEMPORAL_TLS_SERVER_NAME: "temporal.test",
    TEMPORAL_TASK_QUEUE: app.config.temporalTaskQueue,
    MANAGED_DOMAIN: app.config.managedDomain,
    DATA_DIR: await mkdtemp(join(tmpdir(), "mailbox-tls-")),
    ...overrides,
  };
}

test("a worker that reaches Temporal only over mTLS runs the workflows of its task queue", async () => {
  const taskQueue = uniqueName("tls-queue");
  const before = temporalProxy.authorizedClients;
  processes.push(await serveRole("worker", await externalEnv({ TEMPORAL_TASK_QUEUE: taskQueue })));
  expect(temporalProxy.authorizedClients).toBeGreaterThan(before);

  // Started on the plain port; only the worker behind the TLS proxy polls this queue.
  const inboxId = `inb_${uniqueName("gone").replace(/[^a-z0-9]/gi, "")}`;
  const handle = await app.temporal.workflow.start("inboxPurge", {
    workflowId: inboxPurgeWorkflowId(inboxId),
    taskQueue,
    args: [{ inboxId, organizationId: "org_none", batchSize: 10 }],
  });
  expect(await handle.result()).toBeDefined();
});

test("the smtp role's listener and processing thread store mail over TLS to both PostgreSQL and Temporal", async () => {
  const tenant = await app.createTenant();
  const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("tls"), displayName: "TLS" } })).body as { id: string; address: string };
  const sessionsBefore = pgProxy.sessions;
  const smtp = await serveRole("smtp", await externalEnv());
  processes.push(smtp);
  expect(pgProxy.sessions).toBeGreaterThan(sessionsBefore);

  const { client } = await RawSmtpClient.connect(smtp.smtpPort!);
  await client.command("EHLO tls.example");
  const replies = await transaction(client, {
    from: "sender@example.org",
    to: [inbox.address],
    data: "From: sender@example.org\r\nSubject: over tls\r\nMessage-ID: <tls-1@example.org>\r\n\r\nstored through the proxies\r\n",
  });
  await client.quit();
  expect(replies.message?.code, `${JSON.stringify(replies)} ${smtp.stderr()}`).toBe(250);
  const stored = await eventually(async () => (await app.db.fork().findOne(Message, { inboxId: inbox.id })) ?? undefined);
  expect(stored.subject).toBe("over tls");
  // A role process started (its modules loaded, TLS to both proxies) and mail stored through them: more than the
  // default minute on a loaded machine (load ~30), so the test has its own; the wait takes what is left of it.
}, 150_000);

// These two wait out the Temporal client's connection attempts (about ten seconds each): side by side.
test.concurrent("without a client certificate the role does not start, and says it could not reach Temporal", async () => {
  const env = await externalEnv();
  delete (env as Record<string, string | undefined>).TEMPORAL_TLS_CERT;
  delete (env as Record<string, string | undefined>).TEMPORAL_TLS_KEY;
  const { code, stderr } = await serveRoleFailure("api", env);
  expect(code).toBe(1);
  expect(stderr).toMatch(/cannot connect to Temporal at 127\.0\.0\.1:\d+ over TLS: TLS handshake failed: .*certificate/);
});

test.concurrent("a TEMPORAL_TLS_CA that did not sign the server's certificate fails with a certificate error", async () => {
  const { code, stderr } = await serveRoleFailure("api", await externalEnv({ TEMPORAL_TLS_CA: otherCa.ca }));
  expect(code).toBe(1);
  expect(stderr).toMatch(/cannot connect to Temporal at 127\.0\.0\.1:\d+ over TLS: TLS handshake failed: .*certificate/);
});

test("TEMPORAL_TLS_CERT without TEMPORAL_TLS_KEY, or TLS without TEMPORAL_ADDRESS, is a configuration error", async () => {
  const env = await externalEnv();
  delete (env as Record<string, string | undefined>).TEMPORAL_TLS_KEY;
  const half = await serveRoleFailure("api", env);
  expect(half.code).toBe(2);
  expect(half.stderr).toContain("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY must be set together");
  const embedded = await serveRoleFailure("api", { ...(await externalEnv()), TEMPORAL_ADDRESS: "" });
  expect(embedded.code).toBe(2);
  expect(embedded.stderr).toContain("TEMPORAL_TLS* and TEMPORAL_API_KEY need TEMPORAL_ADDRESS");
});

test("TEMPORAL_API_KEY goes with every Temporal connection as a bearer token, over TLS", async () => {
  const server = await pki.server(["localhost", "127.0.0.1"]);
  const seen: string[] = [];
  const fake = http2.createSecureServer({ cert: readFileSync(server.cert), key: readFileSync(server.key), allowHTTP1: false });
  fake.on("stream", (stream, headers) => {
    seen.push(String(headers.authorization));
    stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "16", "grpc-message": "no" }, { endStream: true });
  });
  fake.listen(0, "127.0.0.1");
  await once(fake, "listening");
  const address = `127.0.0.1:${(fake.address() as { port: number }).port}`;
  const access = { tls: { certPath: undefined, keyPath: undefined, caPath: pki.ca, serverName: "localhost" }, apiKey: "cloud-secret" };
  try {
    // The client's and the worker's connections alike; the fake answers Unauthenticated, after the header arrived.
    await expect(connectTemporal(address, "ns", access)).rejects.toThrow();
    await expect(NativeConnection.connect(await temporalConnectOptions(address, access))).rejects.toThrow();
  } finally {
    fake.close();
  }
  expect(seen.length).toBeGreaterThanOrEqual(2);
  expect(new Set(seen)).toEqual(new Set(["Bearer cloud-secret"]));
});

test("PostgreSQL over TLS: verify-full with the CA connects, another CA or a plaintext URL does not", async () => {
  const verified = await openDatabase(pgProxyUrl(), { poolMax: 1, ssl: { sslMode: "verify-full", sslCaPath: pki.ca } });
  expect(await verified.sql.query("select 1 as one")).toEqual([{ one: 1 }]);
  expect(await verified.query("select 2 as two")).toEqual([{ two: 2 }]);
  await verified.close();

  // require encrypts without checking the certificate (libpq's meaning).
  const required = await openDatabase(pgProxyUrl("sslmode=require"), { poolMax: 1 });
  expect(await required.sql.query("select 1 as one")).toEqual([{ one: 1 }]);
  await required.close();

  const wrongCa = await openDatabase(pgProxyUrl(), { poolMax: 1, ssl: { sslMode: "verify-full", sslCaPath: otherCa.ca } }).catch((e: Error) => e);
  const wrongCaError = wrongCa instanceof Error ? wrongCa : await wrongCa.sql.query("select 1").then(() => null, (e: Error) => e);
  expect(wrongCaError?.message).toMatch(/certificate/i);

  const plain = await openDatabase(pgProxyUrl(), { poolMax: 1 }).catch((e: Error) => e);
  const plainError = plain instanceof Error ? plain : await plain.sql.query("select 1").then(() => null, (e: Error) => e);
  expect(plainError).toBeInstanceOf(Error);
});

test("DATABASE_POOL_MAX bounds the connections an api process opens under concurrent requests", async () => {
  const server = await pki.server(["localhost"]);
  const pg = new URL(database.url);
  const counted = await startTlsProxy({ target: { host: pg.hostname, port: Number(pg.port) }, server, postgres: true });
  try {
    const url = new URL(database.url);
    url.hostname = "localhost";
    url.port = String(counted.port);
    const api = await serveRole("api", await externalEnv({ DATABASE_URL: url.toString(), DATABASE_SSL_MODE: "require", DATABASE_POOL_MAX: "1", KEY_CACHE_MS: "0" }));
    processes.push(api);
    const tenant = await app.createTenant();
    const statuses = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const res = await fetch(`${api.api}/v1/inboxes`, { headers: { "x-api-key": tenant.key } });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(new Set(statuses)).toEqual(new Set([200]));
    await api.kill("SIGTERM");
    // One connection for each of the two pools, and the LISTEN clients beside them (the default of 20 opens more).
    expect(counted.peakConnections).toBeLessThanOrEqual(4);
  } finally {
    await counted.stop();
  }
});

test("a namespace whose search attributes cannot be read stops the start, naming the attributes the service needs", async () => {
  const { code, stderr } = await serveRoleFailure("api", {
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_NAMESPACE: "no-such-namespace",
    DATA_DIR: await mkdtemp(join(tmpdir(), "mailbox-tls-")),
  });
  expect(code).toBe(1);
  expect(stderr).toContain('cannot list the search attributes of namespace "no-such-namespace"');
  expect(stderr).toContain("this service needs MailboxOrganizationId (Keyword), MailboxInboxId (Keyword)");
});
