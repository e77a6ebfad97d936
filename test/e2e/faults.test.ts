// The fault benchmark's invariants at a small count (bench/faults-phase.ts, as `npm run bench:faults` runs it):
// the roles as processes of their own (`mailbox serve --role …`) on a PostgreSQL and a Temporal dev server of this
// file's own, inbound SMTP and outbound API load together, and one fault of each kind while they run. Whatever was
// acknowledged (250 / 202) is stored or delivered, no message arrives more than once per fault, every copy carries
// the Message-ID of its 202, and the service acknowledges again after the fault. (`kill -9` of the whole
// `mailbox start` is test/e2e/start.test.ts.)
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { brokenInvariants, runFaultPhase, SinkLedger, type PhaseSettings } from "../../bench/faults-phase.js";
import { startRolesStack, type FaultStack } from "../../bench/faults-stacks.js";
import { startSink } from "../../bench/outbound-sink-process.js";
import { Teardown } from "../../bench/stack.js";
import { loadConfig } from "../../src/config.js";

const SETTINGS: PhaseSettings = {
  inboundRate: 4,
  inboundSessions: 2,
  messageBytes: 2048,
  outboundRate: 2,
  outboundConcurrency: 2,
  beforeS: 3,
  afterS: 3,
  // A delivery attempt cut by a kill is retried after its heartbeat timeout (10 s) plus a retry wait.
  drainS: 150,
};

const teardown = new Teardown();
let workDir: string;
let stack: FaultStack;
let ledger: SinkLedger;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), "mailbox-faults-"));
  await chmod(workDir, 0o755); // the embedded PostgreSQL runs as the postgres user when the tests run as root
  const sink = await startSink({ greetingDelayMs: 0, deferAttempts: 1 }, teardown);
  ledger = new SinkLedger(sink);
  // Servers of this file's own (not the suite's): the faults restart them.
  stack = await startRolesStack(
    { workDir, config: loadConfig({ LOG_LEVEL: "error" }), sink, sinkDomain: "sink.test", inboxes: 4, log: () => undefined },
    teardown,
  );
}, 300_000);

afterAll(async () => {
  await teardown.run();
  if (workDir) await rm(workDir, { recursive: true, force: true });
}, 120_000);

describe.each([
  ["smtp", "kill -9 of the smtp role"],
  ["api", "kill -9 of the api role"],
  ["worker", "kill -9 of the worker role"],
  ["postgres", "a PostgreSQL restart"],
  ["temporal", "a Temporal restart"],
])("under load, %s", (fault, what) => {
  it(`loses nothing acknowledged across ${what}, duplicates at most once, and serves again`, { timeout: 300_000 }, async () => {
    const figures = await runFaultPhase(stack.target, stack.faults[fault]!, SETTINGS, ledger, `t-${fault}-${Date.now().toString(36)}`, () => undefined);
    expect(figures.inbound.acknowledged).toBeGreaterThan(0);
    expect(figures.outbound.acknowledged).toBeGreaterThan(0);
    expect(brokenInvariants(figures)).toEqual([]);
  });
});
