import { expect, test } from "vitest";
import { createInFlight, drainGraceMs } from "../../src/runtime/drain.js";

/** A piece of work that ends when told to, or when its signal aborts. */
function pending() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    finish,
    work: (cut: AbortSignal) =>
      new Promise<string>((resolve, reject) => {
        if (cut.aborted) return reject(cut.reason as Error);
        void done.then(() => resolve("finished"));
        cut.addEventListener("abort", () => reject(cut.reason as Error), { once: true });
      }),
  };
}

test("settled waits for the work under way, and for nothing when none runs", async () => {
  const inFlight = createInFlight();
  await inFlight.settled(60_000); // nothing runs: at once
  const a = pending();
  const running = inFlight.run(a.work);
  let settled = false;
  const waiting = inFlight.settled(60_000).then(() => (settled = true));
  await Promise.resolve();
  expect(settled).toBe(false);
  a.finish();
  expect(await running).toBe("finished");
  await waiting;
  expect(settled).toBe(true);
});

test("settled gives up after its grace; abort then cuts what still runs and what starts after it", async () => {
  const inFlight = createInFlight();
  const stuck = pending();
  const running = inFlight.run(stuck.work);
  await inFlight.settled(20);
  inFlight.abort();
  await expect(running).rejects.toThrow("the worker is shutting down");
  await expect(inFlight.run(pending().work)).rejects.toThrow("the worker is shutting down");
});

test("the grace of what is in flight is a third of SHUTDOWN_TIMEOUT_MS", () => {
  expect(drainGraceMs(30_000)).toBe(10_000);
});
