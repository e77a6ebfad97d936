// Admissions are cached until the database announces a change (NOTIFY from triggers on inboxes and organizations):
// a deleted inbox or a suspended organization is refused at the very next RCPT, well inside the cache's lifetime,
// and a lost listening connection is re-established by itself.
import { afterAll, beforeAll, expect, test } from "vitest";
import { updateOrganization } from "../../src/admin/organizations.js";
import type { SmtpRole } from "../../src/roles/smtp.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { RawSmtpClient } from "../support/smtp-client.js";

/** Far inside the minute an admission is cached for while listening, and generous on a loaded machine. */
const ANNOUNCED_WITHIN_MS = 5_000;

let app: TestApp;
let smtp: SmtpRole;
let tenant: Tenant;

beforeAll(async () => {
  app = await startTestApp();
  smtp = await app.startSmtp();
  tenant = await app.createTenant({ managedLimit: 20 });
});
afterAll(() => app?.stop());

async function createInbox(as: Tenant = tenant): Promise<{ id: string; address: string }> {
  const res = await as.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("cache"), displayName: "Cache" } });
  expect(res.status).toBe(201);
  return res.body;
}

/** The reply to RCPT TO:<address> in a fresh transaction. */
async function rcpt(address: string): Promise<{ code: number; text: string }> {
  const { client } = await RawSmtpClient.connect(smtp.port);
  try {
    await client.command("EHLO c.example");
    await client.command("MAIL FROM:<sender@example.org>");
    const reply = await client.command(`RCPT TO:<${address}>`);
    return { code: reply!.code, text: reply!.text };
  } finally {
    await client.quit();
  }
}

/** PostgreSQL backends listening for admission changes. */
async function listeners(): Promise<number[]> {
  const rows = await app.db.sql.query<{ pid: number }>(
    `select pid from pg_stat_activity where query ilike 'listen "admission_changed"%' and datname = current_database()`,
  );
  return rows.map((r) => r.pid);
}

test("a deleted inbox is refused at the next RCPT, although its admission was just cached", async () => {
  const inbox = await createInbox();
  // Listening: an admission is cached for a minute from here on.
  await eventually(async () => ((await listeners()).length > 0 ? true : undefined));
  expect((await rcpt(inbox.address)).code).toBe(250);
  expect((await tenant.request("DELETE", `/v1/inboxes/${inbox.id}`)).status).toBe(204);
  await eventually(async () => ((await rcpt(inbox.address)).code === 550 ? true : undefined), ANNOUNCED_WITHIN_MS);
  expect(await rcpt(inbox.address)).toEqual({ code: 550, text: expect.stringMatching(/^5\.1\.1 /) });
});

test("a suspended organization's inbox is refused at the next RCPT, and admitted again once it is restored", async () => {
  const other = await app.createTenant();
  const inbox = await createInbox(other);
  expect((await rcpt(inbox.address)).code).toBe(250);
  await updateOrganization(app.db.fork(), other.organizationId, { status: "suspended" });
  await eventually(async () => ((await rcpt(inbox.address)).code === 550 ? true : undefined), ANNOUNCED_WITHIN_MS);
  expect((await rcpt(inbox.address)).text).toMatch(/^5\.2\.1 /);
  await updateOrganization(app.db.fork(), other.organizationId, { status: "active" });
  await eventually(async () => ((await rcpt(inbox.address)).code === 250 ? true : undefined), ANNOUNCED_WITHIN_MS);
});

test("listens again after its connection is lost, and changes are announced again", async () => {
  const before = await eventually(async () => {
    const pids = await listeners();
    return pids.length > 0 ? pids : undefined;
  });
  await app.db.sql.query(`select pg_terminate_backend(pid) from unnest($1::int[]) as pid`, [before]);
  await eventually(async () => {
    const now = await listeners();
    return now.length > 0 && now.every((pid) => !before.includes(pid)) ? true : undefined;
  });
  const inbox = await createInbox();
  expect((await rcpt(inbox.address)).code).toBe(250);
  expect((await tenant.request("DELETE", `/v1/inboxes/${inbox.id}`)).status).toBe(204);
  await eventually(async () => ((await rcpt(inbox.address)).code === 550 ? true : undefined), ANNOUNCED_WITHIN_MS);
});
