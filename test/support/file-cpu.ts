// A setup file of every test file (test/vitest.config.ts): records the CPU-seconds the file cost its worker process
// (the process's own time and that of the processes it started and reaped) in the file's meta, for the
// slowest-files reporter. A worker runs one file at a time, so the file's cost is the worker's CPU from the end of its
// previous file (or from the process's start, for its first file: booting and loading the modules) to this one's end.
import { afterAll } from "vitest";
import { ownCpuSeconds } from "./cpu-usage.js";

declare module "@vitest/runner" {
  interface TaskMeta {
    /** CPU-seconds of the worker process and its reaped children while it ran this file. */
    cpuSeconds?: number;
  }
}

/** On globalThis: with `isolate: false` this module is evaluated again for each file, in the same process. */
const MARK = Symbol.for("mailbox.test.cpuSecondsAtLastFileEnd");
const marks = globalThis as { [MARK]?: number };

// Registered before the file's own hooks, so it runs after them (after-hooks run in reverse order).
afterAll(({}, file) => {
  const now = ownCpuSeconds();
  file.meta.cpuSeconds = now - (marks[MARK] ?? 0);
  marks[MARK] = now;
});
