import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineConfig } from "vitest/config";
import SlowestFilesReporter, { SlowFirstSequencer } from "./support/slowest-files.js";

const root = new URL("..", import.meta.url).pathname;
/**
 * Files that start, kill or watch servers and processes tied to the test process itself (the embedded servers'
 * watchdog, the Temporal CLI install under a stubbed environment, the Node version check): each runs in a process
 * of its own.
 */
const OWN_PROCESS = ["test/runtime/**/*.test.ts", "test/deploy/**/*.test.ts", "test/e2e/start.test.ts", "test/e2e/faults.test.ts", "test/e2e/node-version.test.ts"];
// Both projects: the timeouts, and the setup file that measures each file's CPU-seconds for the reporter.
const common = { testTimeout: 60_000, hookTimeout: 180_000, setupFiles: ["test/support/file-cpu.ts"] };

// Node's compile cache for the worker processes, which inherit this environment: each of them loads vitest and the
// same node_modules (the service's own sources go through vitest's transform, which the cache does not see), and
// the role processes the tests start load dist/. The directory src/cli/mailbox.js uses by default, so the tests and
// the service's commands share one; NODE_DISABLE_COMPILE_CACHE=1 still turns it off.
process.env.NODE_COMPILE_CACHE ||= join(tmpdir(), "node-compile-cache");

// One PostgreSQL and one Temporal server per test run (the root's global setup; what it provides reaches both
// projects); tests isolate themselves by tenant, or by a database of their own (test/support/file-database.ts).
export default defineConfig({
  test: {
    root,
    globalSetup: ["test/support/global-setup.ts"],
    pool: "forks",
    // Two cores, but most end-to-end files spend much of their time waiting (on timers, child processes, the
    // servers): more files in flight fill that time. On a quiet 2-core machine at 7f83a20 a warm run took 324 s of
    // vitest with three workers and 299 s with four, at the same CPU (541 and 554 CPU-s).
    maxWorkers: 4,
    reporters: ["default", new SlowestFilesReporter()],
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        // The service's modules are loaded once per worker process instead of once per file: twenty end-to-end
        // files took a third less CPU time so. Every file starts and stops its own app, so none shares state.
        test: { name: "shared-process", root, pool: "forks", isolate: false, include: ["test/**/*.test.ts"], exclude: OWN_PROCESS, ...common },
      },
      { test: { name: "own-process", root, pool: "forks", include: OWN_PROCESS, ...common } },
    ],
  },
});
