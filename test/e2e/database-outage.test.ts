// A database that goes away for a moment (restarting, a cut connection) is 503 with Retry-After on every face, not
// a 500, and the service answers again once it is back.
import { afterAll, beforeAll, expect, test } from "vitest";
import { inject } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { InboxService } from "../../gen/mailbox/v1/inbox_service_pb.js";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

let proxy: CountingProxy;
let app: TestApp;
let tenant: Tenant;
beforeAll(async () => {
  proxy = await startCountingProxy(inject("databaseUrl"));
  app = await startTestApp({ DATABASE_URL: proxy.url });
  tenant = await app.createTenant();
});
afterAll(async () => {
  proxy?.resume();
  await app?.stop();
  await proxy?.stop();
});

test("answers 503 unavailable with Retry-After while the database is unreachable, and 200 once it is back", async () => {
  const body = { localPart: uniqueName("outage"), displayName: "Outage" };
  expect((await tenant.request("GET", "/v1/inboxes")).status).toBe(200);
  proxy.interrupt();
  try {
    // The key lookup, a read and a write each meet the missing database.
    for (const [method, path] of [["GET", "/v1/me"], ["GET", "/v1/inboxes"], ["POST", "/v1/inboxes"]] as const) {
      const res = await tenant.request(method, path, method === "POST" ? { body } : {});
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(503);
      expect(res.body).toEqual({ error: "unavailable", message: expect.any(String) });
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    const rpc = tenant.connect(InboxService);
    const err = await rpc.listInboxes({}).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(err?.code).toBe(Code.Unavailable);
  } finally {
    proxy.resume();
  }
  await eventually(async () => ((await tenant.request("GET", "/v1/inboxes")).status === 200 ? true : undefined));
  expect((await tenant.request("POST", "/v1/inboxes", { body })).status).toBe(201);
});
