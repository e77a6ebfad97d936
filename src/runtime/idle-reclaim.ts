// Memory back from a thread once large work on it has stopped. V8 collects a heap when allocation fills it, so a
// thread that goes idle after a burst of large mail keeps its garbage — the message-sized buffers it moved, read back
// or built, and the heap pages they grew — until something allocates again; V8's own memory reducer got to it 5 to 60
// seconds later (test/e2e/smtp-memory-large-mail.test.ts). Node has no call to collect on idle, so a thread that did
// large work asks for one: `reclaimWhenIdle()` after each piece of it; once a second has passed without more and with
// the thread's event loop all but idle (what follows the work, storing it, has ended too), the thread runs one
// memory-reducing full collection (V8's "last resort" flavour: the garbage buffers go, the heap is compacted, its
// spare pages and its young generation's grown space given back; a plain major collection, half the cost, shrank the
// heap less). It pauses the thread (~120–230 ms of CPU for a heap of ~60 MB at load average 10), once per burst and
// never while it lasts; on the SMTP listener only once it has been idle for that second. Only in the service's own processes: the
// bin (src/cli/mailbox.js) sets IDLE_MEMORY_RECLAIM=1 for `start`, `serve` and `worker` unless the environment sets
// it (0 turns it off); elsewhere (an app inside a test process, whose thread runs the tests too) nothing is done.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { performance, type EventLoopUtilization } from "node:perf_hooks";

/** How long a thread does no large work, and how long its event loop is idle, before its memory is reclaimed. */
export const RECLAIM_IDLE_MS = 1_000;
/** The share of that time the event loop may have been busy and still count as idle. */
const IDLE_UTILIZATION = 0.05;
/**
 * Collections of a thread this far apart at least: large messages that come a few seconds apart would otherwise
 * cost one each (~0.1–0.2 CPU-s against ~0.45 for a 9 MB message); this keeps it to about 2% of a core.
 */
export const RECLAIM_SPACING_MS = 10_000;

type Collect = (options: { type: "major"; flavor: "last-resort" }) => void;

/** V8's collection function of this thread, or null where it cannot be had. */
let collect: Collect | null | undefined;

/**
 * The collection function without a `gc` global in this thread's own context: with the flag set, V8 gives one to
 * each context made afterwards, and a fresh context hands its over. The flag stays set (it is process-wide, and
 * turning it off could race another thread getting its own); worker threads started later see a `gc` global.
 */
function collection(): Collect | null {
  if (collect === undefined) {
    try {
      setFlagsFromString("--expose-gc");
      const found: unknown = runInNewContext("typeof gc === 'function' ? gc : null");
      collect = typeof found === "function" ? (found as Collect) : null;
    } catch {
      collect = null;
    }
  }
  return collect;
}

let timer: NodeJS.Timeout | undefined;
/** The event loop's utilization when the timer was last armed. */
let armedAt: EventLoopUtilization | undefined;
let lastReclaimAt = -Infinity;
/** Collections run by this thread, for tests and logs. */
let reclaims = 0;

/** Marks large work done on this thread: its memory is reclaimed once it has been idle RECLAIM_IDLE_MS. */
export function reclaimWhenIdle(): void {
  if (process.env.IDLE_MEMORY_RECLAIM !== "1") return;
  armedAt = performance.eventLoopUtilization();
  if (timer) {
    timer.refresh();
    return;
  }
  timer = setTimeout(function reclaimIfIdle() {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, armedAt).utilization > IDLE_UTILIZATION;
    if (busy || performance.now() - lastReclaimAt < RECLAIM_SPACING_MS) {
      // Still busy (with what the large work left to do, or other work): a full collection now would find less
      // garbage than later. Looked at again a period on; a busy heap is collected by V8 as it allocates anyway.
      armedAt = now;
      timer!.refresh();
      return;
    }
    timer = undefined;
    const gc = collection();
    if (!gc) return;
    gc({ type: "major", flavor: "last-resort" });
    lastReclaimAt = performance.now();
    reclaims += 1;
  }, RECLAIM_IDLE_MS);
  // Pending reclaiming never keeps a thread or process alive.
  timer.unref();
}

/** How many times this thread has reclaimed its memory. */
export function reclaimCount(): number {
  return reclaims;
}
