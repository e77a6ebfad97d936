// The operator CLI, run as a real process against the shared database, and its effect on the API.
import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, test } from "vitest";
import { inject } from "vitest";
import { eventually, startTestApp, type TestApp } from "../support/harness.js";

const run = promisify(execFile);
let app: TestApp;

async function mailbox(...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, ["src/cli/mailbox.js", ...args], {
    env: { ...process.env, DATABASE_URL: inject("databaseUrl"), LOG_LEVEL: "error" },
  });
  return JSON.parse(stdout);
}

beforeAll(async () => {
  // The default key cache: a revocation must still take effect within 5 seconds.
  app = await startTestApp({ KEY_CACHE_MS: "2000" });
});
afterAll(() => app?.stop());

test("an operator creates an organization, issues a key shown once, and revokes it", async () => {
  const org = await mailbox("admin", "org", "create", "--name", "Acme", "--managed-limit", "4", "--messages-per-minute", "9");
  expect(org).toMatchObject({ name: "Acme", status: "active", managedLimit: 4, messagesPerMinute: 9 });

  const key = await mailbox("admin", "key", "issue", "--org", org.id, "--scopes", "mailbox:read,validation:use", "--requests-per-minute", "50");
  expect(key.secret).toMatch(/^mbx_[a-f0-9]{16}_[A-Za-z0-9_-]{43}$/);
  expect(key).toMatchObject({ organizationId: org.id, scopes: ["mailbox:read", "validation:use"], requestsPerMinute: 50 });
  expect(JSON.stringify(key)).not.toMatch(/hash|lookup/i);

  const me = await fetch(`${app.baseUrl}/v1/me`, { headers: { "x-api-key": key.secret } });
  expect(me.status).toBe(200);
  expect(((await me.json()) as { managedStarter: unknown }).managedStarter).toEqual({ limit: 4, used: 0, remaining: 4 });

  const listed = await mailbox("admin", "key", "list", "--org", org.id);
  expect(listed).toHaveLength(1);
  expect(listed[0].secret).toBeUndefined();

  const revoked = await mailbox("admin", "key", "revoke", "--id", key.id);
  expect(revoked.revokedAt).toEqual(expect.any(String));
  const started = Date.now();
  await eventually(async () => {
    const res = await fetch(`${app.baseUrl}/v1/me`, { headers: { "x-api-key": key.secret } });
    return res.status === 401 ? true : undefined;
  });
  expect(Date.now() - started).toBeLessThan(5000);
});

test("key rotation prints a new secret and updates change restrictions", async () => {
  const org = await mailbox("admin", "org", "create", "--name", "Rotor");
  const key = await mailbox("admin", "key", "issue", "--org", org.id, "--scopes", "*");
  const rotated = await mailbox("admin", "key", "rotate", "--id", key.id);
  expect(rotated.secret).not.toBe(key.secret);
  expect(rotated.previousSecretValidUntil).toEqual(expect.any(String));
  const updated = await mailbox("admin", "key", "update", "--id", key.id, "--send-mode", "reply_only", "--allowed-ips", "10.0.0.1,10.0.0.2");
  expect(updated).toMatchObject({ sendMode: "reply_only", allowedIps: ["10.0.0.1", "10.0.0.2"] });
  const cleared = await mailbox("admin", "key", "update", "--id", key.id, "--allowed-ips", "");
  expect(cleared.allowedIps).toBeNull();
  const suspended = await mailbox("admin", "org", "update", "--id", org.id, "--status", "suspended");
  expect(suspended.status).toBe("suspended");
});

test("a bad flag value fails with a message naming the problem", async () => {
  const err = await run(process.execPath, ["src/cli/mailbox.js", "admin", "key", "issue", "--org", "x", "--scopes", "mailbox:everything"], {
    env: { ...process.env, DATABASE_URL: inject("databaseUrl") },
  }).catch((e: { code: number; stderr: string }) => e);
  expect((err as { code: number }).code).toBe(1);
  expect((err as { stderr: string }).stderr).toContain("unknown scope");
});

test("dkim-record prints the managed domain's DKIM record, the same on every call", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "mailbox-dkim-"));
  const env = { ...process.env, DATA_DIR: dataDir, MANAGED_DOMAIN: "agents.example", LOG_LEVEL: "error" };
  const first = JSON.parse((await run(process.execPath, ["src/cli/mailbox.js", "dkim-record"], { env })).stdout);
  expect(first).toEqual({ name: "mbx1._domainkey.agents.example", type: "TXT", value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/) });
  const again = JSON.parse((await run(process.execPath, ["src/cli/mailbox.js", "dkim-record"], { env })).stdout);
  expect(again).toEqual(first);
});
