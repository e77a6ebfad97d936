// The inbound pipeline's batching at moderate rates: when each message is prepared before the next is submitted, a
// steady pace of submissions lets a ready message wait a few milliseconds (LINGER_MS in src/inbound/pipeline.ts) for
// the next, so a store transaction carries several; a message without a pace (the first ones, or one after a pause)
// is stored at once. The clock is faked, so the pace is exact whatever the machine's load.
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { InboundPipeline } from "../../src/inbound/pipeline.js";
import { createLogger } from "../../src/logger.js";

/** LINGER_MS of src/inbound/pipeline.ts: what a ready message waits at most for one on its way. */
const LINGER_MS = 10;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "performance"] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A pipeline whose messages are prepared at once (the message is its id), recording batches and when each was ready. */
function recordingPipeline() {
  const batches: string[][] = [];
  const readyAt = new Map<string, number>();
  const waited: number[] = [];
  const pipeline = new InboundPipeline<undefined, string>(
    {
      prepare: async (rawId) => {
        readyAt.set(rawId, performance.now());
        return rawId;
      },
      reserve: () => 1,
      heldBy: () => 1,
      bytesOf: () => 1,
      store: async (batch) => {
        batches.push([...batch]);
        for (const id of batch) waited.push(performance.now() - readyAt.get(id)!);
      },
      failed: async () => undefined,
    },
    { concurrency: 8, memoryBytes: 1024 * 1024, maxQueued: 1000 },
    createLogger("error"),
  );
  return { pipeline, batches, waited };
}

test("messages submitted every 3 ms, each prepared before the next, share store transactions, none waiting over LINGER_MS", async () => {
  const { pipeline, batches, waited } = recordingPipeline();
  const count = 12;
  for (let i = 0; i < count; i++) {
    expect(pipeline.submit(`m${i}`, 100)).toBe(true);
    await vi.advanceTimersByTimeAsync(3);
  }
  await vi.advanceTimersByTimeAsync(LINGER_MS);
  expect(batches.flat()).toEqual(Array.from({ length: count }, (_, i) => `m${i}`));
  // The first messages have no pace yet and go alone; the rest go several to a transaction.
  expect(batches.slice(0, 3)).toEqual([["m0"], ["m1"], ["m2"]]);
  expect(batches.length).toBeLessThanOrEqual(6);
  expect(Math.max(...batches.slice(3, -1).map((b) => b.length))).toBeGreaterThanOrEqual(3);
  expect(Math.max(...waited)).toBeLessThanOrEqual(LINGER_MS);
  await pipeline.stop();
});

test("a message after a pause, one alone without a pace, and the last of a group submitted at once are stored at once", async () => {
  const { pipeline, batches, waited } = recordingPipeline();
  pipeline.submit("alone", 100);
  await vi.advanceTimersByTimeAsync(0);
  expect(batches).toEqual([["alone"]]);
  for (let i = 0; i < 6; i++) {
    pipeline.submit(`steady${i}`, 100);
    await vi.advanceTimersByTimeAsync(2);
  }
  await vi.advanceTimersByTimeAsync(1000);
  const before = batches.length;
  pipeline.submit("after-pause", 100);
  await vi.advanceTimersByTimeAsync(0);
  expect(batches.length).toBe(before + 1);
  expect(batches.at(-1)).toEqual(["after-pause"]);
  expect(waited.at(-1)).toBe(0);
  // Eight in one turn (a hand-over's group) are prepared at once; nothing else is on its way when they are ready.
  await vi.advanceTimersByTimeAsync(1000);
  const group = Array.from({ length: 8 }, (_, i) => `group${i}`);
  for (const id of group) pipeline.submit(id, 100);
  await vi.advanceTimersByTimeAsync(0);
  expect(batches.slice(-1)).toEqual([group]);
  expect(Math.max(...waited.slice(-8))).toBe(0);
  await pipeline.stop();
});
