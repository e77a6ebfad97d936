import { defineConfig } from "vitest/config";
import SlowestFilesReporter, { SlowFirstSequencer } from "./support/slowest-files.js";

// One PostgreSQL and one Temporal server per test run (global setup); tests isolate themselves by tenant.
export default defineConfig({
  test: {
    root: new URL("..", import.meta.url).pathname,
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    // Two cores, but most end-to-end files spend much of their time waiting (on timers, child processes, the
    // servers): a third file in flight fills that time.
    maxWorkers: 3,
    reporters: ["default", new SlowestFilesReporter()],
    sequence: { sequencer: SlowFirstSequencer },
  },
});
