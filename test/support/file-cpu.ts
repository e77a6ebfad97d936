// A setup file of every test file (test/vitest.config.ts): records the CPU-seconds and the bytes written to storage
// that the file cost its worker process (the process's own and those of the processes it started and reaped) in the
// file's meta, for the slowest-files reporter. A worker runs one file at a time, so the file's cost is the worker's
// from the end of its previous file (or from the process's start, for its first file: booting and loading the
// modules) to this one's end. What the run's servers (PostgreSQL, Temporal) write for the file is theirs, not its.
import { afterAll } from "vitest";
import { ownCpuSeconds, readWriteBytes } from "./cpu-usage.js";

declare module "@vitest/runner" {
  interface TaskMeta {
    /** CPU-seconds of the worker process and its reaped children while it ran this file. */
    cpuSeconds?: number;
    /** Bytes the worker process and its reaped children wrote to storage while it ran this file. */
    writeBytes?: number;
  }
}

/** On globalThis: with `isolate: false` this module is evaluated again for each file, in the same process. */
const MARK = Symbol.for("mailbox.test.cpuSecondsAtLastFileEnd");
const WRITE_MARK = Symbol.for("mailbox.test.writeBytesAtLastFileEnd");
const marks = globalThis as { [MARK]?: number; [WRITE_MARK]?: number };

// Registered before the file's own hooks, so it runs after them (after-hooks run in reverse order).
afterAll(({}, file) => {
  const now = ownCpuSeconds();
  file.meta.cpuSeconds = now - (marks[MARK] ?? 0);
  marks[MARK] = now;
  const written = readWriteBytes("self");
  if (written !== undefined) {
    file.meta.writeBytes = written - (marks[WRITE_MARK] ?? 0);
    marks[WRITE_MARK] = written;
  }
});
