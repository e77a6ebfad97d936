// Preloaded into a process (node --import) by bench:inbound-cpu with BENCH_CPU_GC=1: every thread of it (worker
// threads inherit the preload) counts its own isolate's garbage collections by kind, with the pause each cost that
// thread, and keeps the counts with its heap's generation sizes in BENCH_GC_DIR/<pid>-<threadId>.json, rewritten
// every 250 ms. V8's helper threads (V8Worker) do the parallel and concurrent part of every isolate's collections;
// these counts say whose. Plain JavaScript: the parser threads run without tsx.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { constants, PerformanceObserver } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
import { isMainThread, threadId, threadName } from "node:worker_threads";

const dir = process.env.BENCH_GC_DIR;
if (dir) {
  const KINDS = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: "scavenge",
    [constants.NODE_PERFORMANCE_GC_MAJOR]: "markCompact",
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakCallbacks",
  };
  const counts = { scavenge: [0, 0], markCompact: [0, 0], incremental: [0, 0], weakCallbacks: [0, 0] };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = KINDS[entry.detail?.kind];
      if (!kind) continue;
      counts[kind][0] += 1;
      counts[kind][1] += entry.duration;
    }
  }).observe({ entryTypes: ["gc"] });
  const file = join(dir, `${process.pid}-${threadId}.json`);
  const write = () => {
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, [s.space_size, s.space_used_size]]));
    const thread = isMainThread ? "main (listener)" : threadName || `thread ${threadId}`;
    try {
      writeFileSync(file, JSON.stringify({ thread, counts, young: spaces.new_space, old: spaces.old_space }));
    } catch {
      // the bench's directory is gone: it has ended
    }
  };
  write();
  setInterval(write, 250).unref();
}
