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
    // Two cores: more parallel files only queue on the shared database and Temporal server.
    maxWorkers: 2,
    reporters: ["default", new SlowestFilesReporter()],
    sequence: { sequencer: SlowFirstSequencer },
  },
});
