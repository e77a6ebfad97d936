// The OpenAPI document against the running service, by schemathesis (PyPI, pinned): with every check on and NUL
// generation on, each answer must be one the document allows, schema-valid requests must be accepted and
// schema-invalid ones refused. Bounded: a fixed seed and a small example count per operation.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, test } from "vitest";
import { readProcessCpu } from "../support/cpu-usage.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { startTestApp, type TestApp } from "../support/harness.js";
import { ensureSchemathesis } from "../support/tools.js";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.js";

const HOOKS = fileURLToPath(new URL("../fixtures/schemathesis-hooks.py", import.meta.url));
const EXAMPLES_PER_OPERATION = 10;
/** The second run's: enough scenarios for lists of several inboxes to be followed to other operations. */
const STATEFUL_EXAMPLES = 100;
/**
 * What schemathesis.toml holds besides the checks' settings (one file, written by runSchemathesis). The stateful
 * phase follows the links the document declares (src/rest/openapi-links.ts: from ids that are never null) instead
 * of links schemathesis guesses from field names: it guesses one from an inbox's domainId, null for a managed
 * address, and out of a list of inboxes it follows a null one too, to GET /v1/domains/None.
 */
const CONFIG = ["[phases.stateful.inference]", "algorithms = []", ""].join("\n");
const RUN_TIMEOUT_MS = 15 * 60_000;

let app: TestApp;
let dns: TestDnsServer;
let sink: SmtpSink;
let schemathesis: string[];
let workDir: string;
let worker: { stop(): Promise<void> };

beforeAll(async () => {
  // Every name the fuzzer makes up is NXDOMAIN at once, and every message it sends lands in a local sink.
  [dns, sink] = await Promise.all([startDnsServer(), startSmtpSink()]);
  app = await startTestApp({
    DNS_SERVERS: dns.serverList,
    SMTP_ROUTES: `*=127.0.0.1:${sink.port}`,
    TOOLS_DIR: process.env.TOOLS_DIR ?? "",
  });
  // The install (begun by the global setup on a fresh clone) finishes while the worker starts.
  [worker, schemathesis] = await Promise.all([app.startWorker(), ensureSchemathesis(app.config.toolsDir)]);
  workDir = await mkdtemp(join(tmpdir(), "schemathesis-"));
}, 600_000);

afterAll(async () => {
  await worker?.stop();
  await app?.stop();
  await Promise.all([dns?.stop(), sink?.stop()]);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** Runs schemathesis with every check against a fresh organization; resolves with its exit code and output. */
async function runSchemathesis(runArgs: string[]): Promise<{ code: number; output: string }> {
  const tenant = await app.createTenant({
    managedLimit: 100_000,
    messagesPerMinute: 1_000_000,
    messagesPerDay: 1_000_000,
    recipientsPerDay: 1_000_000,
    restrictions: { requestsPerMinute: 1_000_000 },
  });
  // Every part of the contract is served: a 501 would be a server error like any other 5xx (a part marked
  // x-not-implemented again would document it, and this line would list it).
  const configFile = join(workDir, "schemathesis.toml");
  await writeFile(configFile, `${CONFIG}[checks.not_a_server_error]\nexpected-statuses = ["2xx", "3xx", "4xx"]\n`);
  const [python, ...entry] = schemathesis;
  const args = [
    ...entry,
    `--config-file=${configFile}`,
    "run",
    `${app.baseUrl}/openapi.json`,
    "--checks=all",
    `--header=x-api-key: ${tenant.key}`,
    ...runArgs,
    "--workers=1",
    "--generation-database=none",
    "--no-color",
    // An event stream has no end, and schemathesis reads each answer whole (test/e2e/event-stream.test.ts covers it).
    "--exclude-operation-id=streamEvents",
    // A wait holds its answer up to 25 s when nothing matches, past schemathesis's 10 s read timeout; its parameters
    // and answers are covered by test/e2e/wait-for-message.test.ts.
    "--exclude-operation-id=waitForMessage",
  ];
  // What the run cost, for the log: schemathesis's process (reaped when it ends) and this one, which serves it.
  const reapedBefore = readProcessCpu("self")?.reapedChildrenSeconds ?? 0;
  const ownBefore = process.cpuUsage();
  const result = await promisify(execFile)(python!, args, {
    cwd: workDir,
    timeout: RUN_TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, SCHEMATHESIS_HOOKS: HOOKS, SCHEMATHESIS_BASE_URL: app.baseUrl, SCHEMATHESIS_API_KEY: tenant.key },
  }).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (e: { code?: number; stdout?: string; stderr?: string; message: string }) => ({
      code: e.code ?? -1,
      output: `${e.stdout ?? ""}\n${e.stderr ?? ""}\n${e.message}`,
    }),
  );
  const own = process.cpuUsage(ownBefore);
  const reaped = (readProcessCpu("self")?.reapedChildrenSeconds ?? 0) - reapedBefore;
  console.log(`schemathesis ${runArgs.join(" ")}: schemathesis ${reaped.toFixed(1)} CPU-s, the service and this test process ${((own.user + own.system) / 1e6).toFixed(1)} CPU-s`);
  return result;
}

test("schemathesis finds no failure with every check against a fresh organization", async () => {
  const result = await runSchemathesis([`--max-examples=${EXAMPLES_PER_OPERATION}`, "--seed=1"]);
  expect(result.code, result.output).toBe(0);
  expect(result.output).toMatch(/No issues found|passed/);
}, RUN_TIMEOUT_MS + 60_000);

test("the stateful phase follows the document's links between inbox and domain operations many times over without a failure", async () => {
  // Lists of managed inboxes (each domainId null) lead to domain operations only when a link is offered from them.
  const result = await runSchemathesis(["--phases=stateful", `--max-examples=${STATEFUL_EXAMPLES}`, "--seed=7", "--include-path-regex=^/v1/(inboxes|domains)"]);
  expect(result.code, result.output).toBe(0);
  expect(result.output).toMatch(/Stateful \(in [\d.]+s\)\s+Scenarios:\s+\d+\s+API Links:\s+[1-9]\d* covered/);
  // Only declared links: none guessed from field names (CONFIG).
  expect(result.output).not.toMatch(/\([1-9]\d* inferred\)/);
}, RUN_TIMEOUT_MS + 60_000);
