import { afterAll, beforeAll, expect, test } from "vitest";
import { startTestApp, type TestApp } from "../support/harness.js";

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.stop());

test("smoke", async () => {
  const t = await app.createTenant();
  const me = await t.request("GET", "/v1/me");
  console.log(JSON.stringify(me.body));
  expect(me.status).toBe(200);
  const created = await t.request("POST", "/v1/inboxes", { body: { localPart: "Agent.One", displayName: "Agent" } });
  console.log(created.status, JSON.stringify(created.body));
  const list = await t.request("GET", "/v1/inboxes?limit=1");
  console.log(list.status, JSON.stringify(list.body));
  const bad = await t.request("GET", "/v1/inboxes?limit=0");
  console.log(bad.status, JSON.stringify(bad.body));
  const un = await t.request("POST", "/v1/validate", { body: { email: "a@b.c" } });
  console.log(un.status, JSON.stringify(un.body));
});
