// Delivery by DNS: MX hosts by preference (the next one when a host refuses the connection), the domain itself
// without MX, a null MX and a missing domain (final), a failing DNS server (deferred, then delivered). A real DNS
// server (test/support/dns-server.ts) answers through DNS_SERVERS; MX hosts resolve to loopback addresses, exempt
// from the public-address check by DELIVERY_ALLOW_HOSTS, and the worker's MX port is the sink's (25 outside tests).
import { createServer } from "node:net";
import { afterAll, beforeAll, expect, inject, onTestFinished, test } from "vitest";
import type { Worker } from "@temporalio/worker";
import { createConfiguredWorker } from "../../src/roles/worker.js";
import { createDeliveryStarter } from "../../src/temporal/client.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { eventually, startTestApp, uniqueName, type TestApp, type Tenant } from "../support/harness.js";
import { insertSubmission, submissionState, type SubmissionState } from "../support/outbound-fixtures.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

let app: TestApp;
let dns: TestDnsServer;
let sink: SmtpSink;
let worker: Worker;
let running: Promise<void>;
let tenant: Tenant;
let sender: string;

beforeAll(async () => {
  [dns, sink] = await Promise.all([startDnsServer(), startSmtpSink()]);
  app = await startTestApp({
    DNS_SERVERS: dns.serverList,
    DNS_TIMEOUT_MS: "200",
    DELIVERY_ALLOW_HOSTS: "127.0.0.1,127.0.0.2",
    DELIVERY_RETRY_INITIAL: "200ms",
    DELIVERY_RETRY_MAX: "400ms",
    DELIVERY_TIMEOUT_MS: "3000",
  });
  worker = await createConfiguredWorker(app.config, app.db, app.config.temporalAddress!, { code: inject("workflowBundleCode") }, { deliveryMxPort: sink.port });
  running = worker.run();
  tenant = await app.createTenant();
  sender = `${uniqueName("agent")}@${app.config.managedDomain}`;
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await app?.stop();
  await Promise.all([sink?.stop(), dns?.stop()]);
});

async function send(to: string): Promise<string> {
  const s = await insertSubmission(app.db, { organizationId: tenant.organizationId, from: { email: sender }, to: [{ email: to }] });
  await createDeliveryStarter(app.temporal, app.config.temporalTaskQueue).start({ submissionId: s.submissionId, organizationId: tenant.organizationId, inboxId: null });
  return s.submissionId;
}

function until(submissionId: string, done: (s: SubmissionState) => boolean): Promise<SubmissionState> {
  return eventually(async () => {
    const state = await submissionState(app.db, submissionId);
    return done(state) ? state : undefined;
  });
}

const domain = (label: string) => `${uniqueName(label)}.test`;

test("delivers to the MX hosts in preference order, moving on when the preferred one drops the connection", async () => {
  const d = domain("mx");
  // The preferred host (127.0.0.2 at the sink's port) drops every connection before its greeting; the next one
  // takes the mail.
  let dropped = 0;
  const dead = createServer((socket) => {
    dropped++;
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => dead.once("error", reject).listen(sink.port, "127.0.0.2", resolve));
  onTestFinished(() => void dead.close());
  dns.set(d, [
    { type: "MX", preference: 20, exchange: `backup.${d}` },
    { type: "MX", preference: 5, exchange: `down.${d}` },
  ]);
  dns.set(`down.${d}`, [{ type: "A", address: "127.0.0.2" }]);
  dns.set(`backup.${d}`, [{ type: "A", address: "127.0.0.1" }]);
  const to = `alice@${d}`;
  const id = await send(to);
  const state = await until(id, (s) => s.status === "delivered");
  expect(state.recipients[0]).toMatchObject({ status: "delivered", attempts: 1, response: expect.stringMatching(/^250 /) });
  expect(sink.copiesFor(to)).toHaveLength(1);
  expect(dropped).toBe(1);
});

test("a domain without MX receives at its own address (implicit MX)", async () => {
  const d = domain("implicit");
  dns.set(d, [{ type: "A", address: "127.0.0.1" }]);
  const to = `bob@${d}`;
  const state = await until(await send(to), (s) => s.status === "delivered");
  expect(state.recipients[0]!.status).toBe("delivered");
  expect(dns.queries(d, "MX")).toBeGreaterThanOrEqual(1);
  expect(sink.copiesFor(to)).toHaveLength(1);
});

test("a null MX fails the recipient with null_mx, without a connection or a suppression", async () => {
  const d = domain("nullmx");
  dns.set(d, [{ type: "MX", preference: 0, exchange: "." }]);
  const to = `carol@${d}`;
  const state = await until(await send(to), (s) => s.status === "failed");
  expect(state).toMatchObject({ failureCode: "null_mx" });
  expect(state.recipients[0]).toMatchObject({ status: "failed", failureCode: "null_mx", attempts: 1 });
  expect(sink.copiesFor(to)).toHaveLength(0);
  expect(await app.db.query(`select 1 from suppressions where organization_id = ?`, [tenant.organizationId])).toEqual([]);
});

test("a domain that does not exist fails the recipient with no_such_domain", async () => {
  const to = `dave@${domain("gone")}`;
  const state = await until(await send(to), (s) => s.status === "failed");
  expect(state.recipients[0]).toMatchObject({ status: "failed", failureCode: "no_such_domain", response: expect.stringContaining("NXDOMAIN") });
});

test("a DNS failure defers the recipient, which is delivered once DNS answers again", async () => {
  const d = domain("flaky");
  dns.fail(d, "servfail");
  const to = `erin@${d}`;
  const id = await send(to);
  const deferred = await until(id, (s) => s.recipients[0]!.attempts >= 1);
  expect(deferred).toMatchObject({ status: "deferred" });
  expect(deferred.recipients[0]).toMatchObject({ status: "deferred", failureCode: "transport_edns" });

  dns.clearFailure(d);
  dns.set(d, [{ type: "MX", preference: 10, exchange: `mx.${d}` }]);
  dns.set(`mx.${d}`, [{ type: "A", address: "127.0.0.1" }]);
  const state = await until(id, (s) => s.status === "delivered");
  expect(state.recipients[0]!.attempts).toBeGreaterThanOrEqual(2);
  expect(sink.copiesFor(to)).toHaveLength(1);
});
