// The per-key request rate is shared by every server process: two real `mailbox serve --role api` processes
// on one database together admit exactly requestsPerMinute requests of a key per minute.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, expect, test } from "vitest";
import { inject } from "vitest";
import { startTestApp, type TestApp } from "../support/harness.js";

let app: TestApp;
const servers: ChildProcess[] = [];

async function startApiProcess(): Promise<string> {
  const child = spawn(process.execPath, ["src/cli/mailbox.js", "serve", "--role", "api"], {
    env: {
      ...process.env,
      DATABASE_URL: inject("databaseUrl"),
      TEMPORAL_ADDRESS: inject("temporalAddress"),
      HTTP_PORT: "0",
      DATA_DIR: app.config.dataDir,
      CURSOR_SECRET: "x".repeat(32),
      LOG_LEVEL: "error",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  servers.push(child);
  let out = "";
  child.stdout!.setEncoding("utf8");
  for await (const chunk of child.stdout!) {
    out += chunk;
    const line = out.split("\n").find((l) => l.startsWith("{"));
    if (line) return (JSON.parse(line) as { api: string }).api;
  }
  throw new Error("server exited before listening");
}

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  for (const s of servers) {
    s.kill("SIGTERM");
    if (s.exitCode === null) await once(s, "exit");
  }
  await app?.stop();
});

test("two server processes share one counter and answer 429 with Retry-After past the limit", async () => {
  const [a, b] = await Promise.all([startApiProcess(), startApiProcess()]);
  const tenant = await app.createTenant({ restrictions: { requestsPerMinute: 10 } });
  // Stay inside one minute window so the count is exact.
  const msIntoMinute = Date.now() % 60_000;
  if (msIntoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_000 - msIntoMinute + 100));

  const statuses: number[] = [];
  let retryAfter: string | null = null;
  for (let i = 0; i < 14; i++) {
    const res = await fetch(`${i % 2 === 0 ? a : b}/v1/me`, { headers: { "x-api-key": tenant.key } });
    statuses.push(res.status);
    if (res.status === 429) {
      retryAfter = res.headers.get("retry-after");
      expect(await res.json()).toEqual({ error: "rate_limited", message: expect.any(String) });
    } else await res.arrayBuffer();
  }
  expect(statuses.filter((s) => s === 200)).toHaveLength(10);
  expect(statuses.slice(10)).toEqual([429, 429, 429, 429]);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
});
