// Epoch milliseconds with sub-millisecond steps, comparable across the benchmark's processes and PostgreSQL's
// timestamps. `performance.timeOrigin + performance.now()` alone is not: timeOrigin is read once when a process
// starts, so a step of the machine's clock after that (an NTP step, a VM fork — seen here: webhook latencies came
// out negative) sets processes started before and after it apart. The monotonic clock measures between reads of
// the wall clock; when the two part by more than STEP_MS (they wander ~1.5 ms apart here: whole-millisecond
// Date.now() and the kernel slewing the wall clock), the wall clock wins and the step is counted.
const STEP_MS = 5;

let offset = Date.now() - performance.now();
let steps = 0;

export function epochNow(): number {
  const mono = performance.now();
  const wall = Date.now();
  // Date.now() truncates to whole milliseconds: within [wall, wall + 1) the monotonic reading is the finer one.
  if (offset + mono < wall - STEP_MS || offset + mono > wall + 1 + STEP_MS) {
    offset = wall - mono;
    steps++;
  }
  return offset + mono;
}

/** How many times the machine's clock stepped while this process ran (a duration spanning a step is off by it). */
export function clockSteps(): number {
  return steps;
}
