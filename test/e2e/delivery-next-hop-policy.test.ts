// A tenant chooses its recipients' domains and so their DNS: delivery never connects to an MX address that is not
// public, so the service's own network cannot be probed on port 25 through a submission's response. The worker
// runs as in production (no DELIVERY_ALLOW_HOSTS); a listener on the loopback addresses at the worker's MX port
// counts every connection the refused hops would have made.
import { createServer, type AddressInfo, type Server } from "node:net";
import type { Worker } from "@temporalio/worker";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { createConfiguredWorker } from "../../src/roles/worker.js";
import { createDeliveryStarter } from "../../src/temporal/client.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { insertSubmission, submissionState, type SubmissionState } from "../support/outbound-fixtures.js";

let app: TestApp;
let dns: TestDnsServer;
let worker: Worker;
let running: Promise<void>;
let tenant: Tenant;
let sender: string;
let listeners: Server[] = [];
let connections = 0;

/** Listens on 127.0.0.1 and ::1 at one port (a free one on both), counting connections. */
async function countingListeners(): Promise<number> {
  for (let tries = 0; ; tries++) {
    const listen = (host: string, port: number) =>
      new Promise<Server>((resolve, reject) => {
        const server = createServer((socket) => {
          connections++;
          socket.destroy();
        });
        server.once("error", reject).listen(port, host, () => resolve(server));
      });
    const v4 = await listen("127.0.0.1", 0);
    const port = (v4.address() as AddressInfo).port;
    try {
      listeners = [v4, await listen("::1", port)];
      return port;
    } catch (e) {
      v4.close();
      if (tries >= 5) throw e;
    }
  }
}

beforeAll(async () => {
  dns = await startDnsServer();
  const mxPort = await countingListeners();
  app = await startTestApp({ DNS_SERVERS: dns.serverList, DNS_TIMEOUT_MS: "200", DELIVERY_RETRY_INITIAL: "200ms", DELIVERY_RETRY_MAX: "400ms" });
  worker = await createConfiguredWorker(app.config, app.db, app.config.temporalAddress!, { code: inject("workflowBundleCode") }, { deliveryMxPort: mxPort });
  running = worker.run();
  tenant = await app.createTenant();
  sender = `${uniqueName("agent")}@${app.config.managedDomain}`;
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await app?.stop();
  for (const listener of listeners) listener.close();
  await dns?.stop();
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

test.each([
  ["127.0.0.1", "A", "loopback"],
  ["::1", "AAAA", "loopback"],
] as const)("an MX host at %s fails the recipient with next_hop_not_public at once, and nothing is connected to", async (address, type, why) => {
  const d = `${uniqueName("probe")}.test`;
  dns.set(d, [{ type: "MX", preference: 10, exchange: `mx.${d}` }]);
  dns.set(`mx.${d}`, [{ type, address }]);
  const before = connections;
  const id = await send(`root@${d}`);

  const state = await until(id, (s) => s.status === "failed");
  expect(state).toMatchObject({ status: "failed", failureCode: "next_hop_not_public" });
  expect(state.recipients[0]).toMatchObject({
    status: "failed",
    failureCode: "next_hop_not_public",
    attempts: 1,
    // The resolver writes IPv6 addresses in full (0:0:0:0:0:0:0:1).
    response: expect.stringMatching(new RegExp(`^${d} has no public address to deliver to: mx\\.${d} at [0-9a-f.:]+ \\(${why}\\)$`)),
  });
  expect(connections).toBe(before);
  // Our policy, not the address's fault: no suppression.
  expect(await app.db.query(`select 1 from suppressions where organization_id = ?`, [tenant.organizationId])).toEqual([]);
  // The tenant sees the code, not a peer's reply.
  const api = await tenant.request("GET", `/v1/submissions/${id}`);
  expect(api.body).toMatchObject({ status: "failed", failureCode: "next_hop_not_public", recipients: [{ status: "failed" }] });
});

test("a domain without MX whose own address is loopback fails the same way", async () => {
  const d = `${uniqueName("implicit")}.test`;
  dns.set(d, [{ type: "A", address: "127.0.0.1" }]);
  const before = connections;
  const state = await until(await send(`root@${d}`), (s) => s.status === "failed");
  expect(state.recipients[0]).toMatchObject({ status: "failed", failureCode: "next_hop_not_public", attempts: 1 });
  expect(connections).toBe(before);
});
