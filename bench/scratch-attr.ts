import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { loadConfig } from "../src/config.js";
import { withChildren } from "./cpu.js";
import { runLoad } from "./load.js";
import { seed } from "./seed.js";
import { startInfrastructure, startServer, Teardown } from "./stack.js";

const teardown = new Teardown();
try {
  const dataDir = await mkdtemp(join(tmpdir(), "attr-"));
  teardown.add(() => rm(dataDir, { recursive: true, force: true }));
  await chmod(dataDir, 0o755);
  const infra = await startInfrastructure(dataDir, teardown);
  const config = loadConfig({});
  const keys = await seed(infra.databaseUrl, { organizations: 50, inboxesPerOrganization: 50, managedDomain: config.managedDomain, defaults: config.defaults });
  const env = { DATABASE_URL: infra.databaseUrl, TEMPORAL_ADDRESS: infra.temporalAddress, HTTP_PORT: "0", LOG_LEVEL: "error", DATA_DIR: join(dataDir, "api"), CURSOR_SECRET: randomBytes(32).toString("hex"), KEY_CACHE_MS: process.env.KEY_CACHE_MS ?? "2000" };
  const ours = await startServer("ours", ["src/cli/mailbox.js", "serve", "--role", "api"], env, [], teardown);
  const base = await startServer("baseline", ["--import", "tsx", "bench/baseline-server.ts"], env, [], teardown);
  const conns = Number(process.env.CONNS ?? 1);
  for (const path of ["/v1/me", "/v1/inboxes?limit=20"]) {
    for (const s of [ours, base, ours, base]) {
      const f = await runLoad(s.url, { name: path, path, connections: conns, target: { requestsPerSecond: 0, p99Ms: 0 } }, keys.slice(0, 1), 6, {
        server: () => [s.pid], idleServer: () => [s === ours ? base.pid : ours.pid], mychildren: () => withChildren(process.pid).slice(1), postgres: () => withChildren(infra.postmasterPid!), loadgen: () => [process.pid],
      });
      const per = (c: number) => ((c / f.requestsPerSecond) * 1e6).toFixed(0);
      console.log(`${path.padEnd(22)} ${s.name.padEnd(8)} ${f.requestsPerSecond.toFixed(0).padStart(5)} req/s p50 ${f.p50Ms} p99 ${f.p99Ms}  server ${per(f.cpu.groups.server!)} µs/req  pg ${per(f.cpu.groups.postgres!)} µs/req  loadgen ${per(f.cpu.groups.loadgen!)} µs/req other ${f.cpu.otherCores.toFixed(2)} idleServer ${f.cpu.groups.idleServer!.toFixed(2)} children ${f.cpu.groups.mychildren!.toFixed(2)} fail ${f.failures}`);
    }
  }
} finally {
  await teardown.run();
}
process.exit(0);
