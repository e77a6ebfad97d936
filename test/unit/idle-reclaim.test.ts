// A thread's memory reclaimed once it is idle after large work: not while its event loop stays busy, then once, with
// what the work dropped collected; and not again sooner than RECLAIM_SPACING_MS after, however soon more comes.
import { setTimeout as sleep } from "node:timers/promises";
import { expect, onTestFinished, test } from "vitest";
import { RECLAIM_IDLE_MS, RECLAIM_SPACING_MS, reclaimCount, reclaimWhenIdle } from "../../src/runtime/idle-reclaim.js";

/** Keeps this thread's event loop busy for `ms`: turns of 20 ms of work, with the loop's other phases between them. */
async function busyFor(ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const turnEnds = Date.now() + 20;
    while (Date.now() < turnEnds) {
      // work
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test("off unless the service's bin turned it on", async () => {
  const before = reclaimCount();
  delete process.env.IDLE_MEMORY_RECLAIM;
  reclaimWhenIdle();
  await sleep(3 * RECLAIM_IDLE_MS);
  expect(reclaimCount()).toBe(before);
});

test("after large work, a thread's garbage is collected once its event loop has been idle, not while it is busy, and collections are spaced", async () => {
  process.env.IDLE_MEMORY_RECLAIM = "1"; // as src/cli/mailbox.js sets it for the service's commands
  onTestFinished(() => {
    delete process.env.IDLE_MEMORY_RECLAIM;
  });
  const before = reclaimCount();
  let dropped: { bytes: Uint8Array } | null = { bytes: new Uint8Array(32 * 1024 * 1024) };
  const dropping = new WeakRef(dropped);
  dropped = null;

  reclaimWhenIdle();
  reclaimWhenIdle(); // more large work: still one collection, later
  await busyFor(3 * RECLAIM_IDLE_MS);
  expect(reclaimCount()).toBe(before);

  // Idle now: collected within a couple of periods (or once a collection of this thread just before is far enough
  // behind), polled, at most 10 s beyond that however slow the machine.
  for (let i = 0; i < (RECLAIM_SPACING_MS + 10_000) / 100 && reclaimCount() === before; i++) await sleep(100);
  expect(reclaimCount()).toBe(before + 1);
  const firstAt = Date.now(); // within a poll of the collection
  expect(dropping.deref()).toBeUndefined();

  // Nothing more without more large work.
  await sleep(2 * RECLAIM_IDLE_MS);
  expect(reclaimCount()).toBe(before + 1);

  // More large work right after: collected again, but not before the spacing since the last has passed.
  reclaimWhenIdle();
  for (let i = 0; i < (RECLAIM_SPACING_MS + 10_000) / 100 && reclaimCount() === before + 1; i++) await sleep(100);
  expect(reclaimCount()).toBe(before + 2);
  expect(Date.now() - firstAt).toBeGreaterThanOrEqual(RECLAIM_SPACING_MS - 200);
}, 60_000);
