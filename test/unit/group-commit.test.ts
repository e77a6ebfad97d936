// Group commit: a lone item is written at once; items arriving during a write go together in the next one, in
// order, within the group bounds; a failed write fails its own items only. With a linger, a group waits for more
// items up to the linger (a full one goes at once).
import { expect, test, vi } from "vitest";
import { groupCommit } from "../../src/db/group-commit.js";

/** A write whose completion the test controls, recording the groups it was given. */
function controlledWrite() {
  const groups: number[][] = [];
  const pending: { finish: () => void; fail: (e: Error) => void }[] = [];
  const write = (group: readonly number[]) =>
    new Promise<readonly string[]>((resolve, reject) => {
      groups.push([...group]);
      pending.push({ finish: () => resolve(group.map((n) => `r${n}`)), fail: reject });
    });
  return { groups, pending, write };
}

const tick = () => new Promise((r) => setImmediate(r));

test("writes a lone item at once and groups what arrives while a write is under way", async () => {
  const w = controlledWrite();
  const put = groupCommit(w.write, { maxGroup: 10, maxInFlight: 1 });
  const first = put(1);
  expect(w.groups).toEqual([[1]]);
  const rest = [2, 3, 4].map(put);
  await tick();
  expect(w.groups).toEqual([[1]]); // waiting for the write under way
  w.pending[0]!.finish();
  expect(await first).toBe("r1");
  await tick();
  expect(w.groups).toEqual([[1], [2, 3, 4]]);
  w.pending[1]!.finish();
  expect(await Promise.all(rest)).toEqual(["r2", "r3", "r4"]);
});

test("keeps groups within maxGroup and maxWeight, and lets a single heavy item through alone", async () => {
  const w = controlledWrite();
  const put = groupCommit(w.write, { maxGroup: 3, maxInFlight: 1, maxWeight: 10, weightOf: (n) => n });
  const all = [1, 2, 3, 4, 5, 20, 1].map(put);
  for (let i = 0; i < 5; i++) {
    await tick();
    w.pending[i]?.finish();
  }
  await Promise.all(all);
  expect(w.groups).toEqual([[1], [2, 3, 4], [5], [20], [1]]);
});

test("runs up to maxInFlight writes at once", async () => {
  const w = controlledWrite();
  const put = groupCommit(w.write, { maxGroup: 10, maxInFlight: 2 });
  const all = [1, 2, 3, 4].map(put);
  expect(w.groups).toEqual([[1], [2]]);
  w.pending[1]!.finish();
  await tick();
  expect(w.groups).toEqual([[1], [2], [3, 4]]);
  w.pending[0]!.finish();
  w.pending[2]!.finish();
  expect(await Promise.all(all)).toEqual(["r1", "r2", "r3", "r4"]);
});

test("a failed write rejects every item of its group and no other", async () => {
  const w = controlledWrite();
  const put = groupCommit(w.write, { maxGroup: 10, maxInFlight: 1 });
  const first = put(1);
  const grouped = [put(2), put(3)];
  w.pending[0]!.finish();
  await first;
  await tick();
  w.pending[1]!.fail(new Error("connection lost"));
  for (const p of grouped) await expect(p).rejects.toThrow("connection lost");
  const after = put(4);
  await tick();
  w.pending[2]!.finish();
  expect(await after).toBe("r4");
});

test("with a linger, a group waits for more items up to lingerMs, and the next item lingers anew", async () => {
  vi.useFakeTimers();
  try {
    const w = controlledWrite();
    const put = groupCommit(w.write, { maxGroup: 10, maxInFlight: 2, lingerMs: 20 });
    const first = [put(1), put(2)];
    vi.advanceTimersByTime(19);
    expect(w.groups).toEqual([]);
    const third = put(3);
    vi.advanceTimersByTime(1);
    expect(w.groups).toEqual([[1, 2, 3]]);
    const later = put(4);
    vi.advanceTimersByTime(19);
    expect(w.groups).toEqual([[1, 2, 3]]);
    vi.advanceTimersByTime(1);
    expect(w.groups).toEqual([[1, 2, 3], [4]]);
    w.pending[0]!.finish();
    w.pending[1]!.finish();
    expect(await Promise.all([...first, third, later])).toEqual(["r1", "r2", "r3", "r4"]);
  } finally {
    vi.useRealTimers();
  }
});

test("with a linger, a full group is written at once, and what waits past its linger goes when a write ends", async () => {
  vi.useFakeTimers();
  try {
    const w = controlledWrite();
    const put = groupCommit(w.write, { maxGroup: 3, maxInFlight: 1, lingerMs: 20 });
    const all = [1, 2, 3, 4].map(put);
    expect(w.groups).toEqual([[1, 2, 3]]);
    vi.advanceTimersByTime(20);
    expect(w.groups).toEqual([[1, 2, 3]]); // the one write allowed is under way
    w.pending[0]!.finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(w.groups).toEqual([[1, 2, 3], [4]]);
    w.pending[1]!.finish();
    expect(await Promise.all(all)).toEqual(["r1", "r2", "r3", "r4"]);
  } finally {
    vi.useRealTimers();
  }
});
