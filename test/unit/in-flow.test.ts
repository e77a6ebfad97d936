// The in-flow delay's rule on its own clock: nothing waits under the mark; over it, transactions wait in order and
// go ahead one per finished message, all sessions together, or once the longest delay has passed.
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { InFlowDelay, MIN_MARK_MESSAGES } from "../../src/inbound/in-flow.js";

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

const MAX_DELAY_MS = 5000;

function setup(markMs = 2000) {
  let backlog = 0;
  const flow = new InFlowDelay({ markMs, maxDelayMs: MAX_DELAY_MS }, () => backlog, () => Date.now());
  const admitted: number[] = [];
  /** Starts transaction `n`; records it once it may go ahead. */
  const start = (n: number) => {
    const wait = flow.admit();
    if (!wait) admitted.push(n);
    else void wait.then(() => admitted.push(n));
  };
  return { flow, admitted, start, setBacklog: (n: number) => void (backlog = n) };
}

/** Lets resolved waits run their continuations. */
const settle = () => vi.advanceTimersByTimeAsync(0);

describe("InFlowDelay", () => {
  test("nothing waits while the backlog is at most MIN_MARK_MESSAGES, even with nothing stored yet", async () => {
    const { flow, admitted, start, setBacklog } = setup();
    setBacklog(MIN_MARK_MESSAGES);
    for (let n = 1; n <= 3; n++) start(n);
    await settle();
    expect(admitted).toEqual([1, 2, 3]);
    expect(flow.stats()).toEqual({ delayed: 0, delaySeconds: 0, waiting: 0 });
  });

  test("over the mark, transactions of every session wait in order and go ahead one per finished message", async () => {
    const { flow, admitted, start, setBacklog } = setup();
    setBacklog(MIN_MARK_MESSAGES + 50);
    for (let n = 1; n <= 5; n++) start(n);
    await settle();
    expect(admitted).toEqual([]);
    expect(flow.stats().waiting).toBe(5);

    vi.advanceTimersByTime(100);
    flow.progressed(2);
    await settle();
    expect(admitted).toEqual([1, 2]);
    flow.progressed(3);
    await settle();
    expect(admitted).toEqual([1, 2, 3]);
    expect(flow.stats()).toEqual({ delayed: 3, delaySeconds: 0.3, waiting: 2 });
    // Storing 1.5 msg/s over the 2 s window is a mark of 3 messages: still over.
    expect(flow.storingRate()).toBe(1.5);
  });

  test("a transaction waits at most the longest delay, then goes ahead without a token", async () => {
    const { flow, admitted, start, setBacklog } = setup();
    setBacklog(MIN_MARK_MESSAGES + 1);
    start(1);
    await vi.advanceTimersByTimeAsync(MAX_DELAY_MS - 1);
    expect(admitted).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(admitted).toEqual([1]);
    expect(flow.stats()).toEqual({ delayed: 1, delaySeconds: MAX_DELAY_MS / 1000, waiting: 0 });
  });

  test("the mark is markMs of storing at the measured rate: 100 msg/s and 2 s hold 200 messages back before any wait", async () => {
    const { flow, admitted, start, setBacklog } = setup(2000);
    for (let i = 1; i <= 20; i++) {
      vi.advanceTimersByTime(100);
      flow.progressed(i * 10);
    }
    expect(flow.storingRate()).toBe(100);
    setBacklog(200);
    start(1);
    setBacklog(201);
    start(2);
    await settle();
    expect(admitted).toEqual([1]);
    // The backlog falls under the mark: whoever waits goes ahead, and tokens are not kept.
    setBacklog(150);
    vi.advanceTimersByTime(100);
    flow.progressed(205);
    await settle();
    expect(admitted).toEqual([1, 2]);
    expect(flow.stats().waiting).toBe(0);
  });

  test("a backlog fallen under the mark lets in as many waiting transactions as it is under by, not all at once", async () => {
    const { flow, admitted, start, setBacklog } = setup();
    setBacklog(MIN_MARK_MESSAGES + 50);
    for (let n = 1; n <= 5; n++) start(n);
    // Nothing finished (the rate, so the mark, stays at its floor), but 53 messages left the backlog otherwise.
    setBacklog(MIN_MARK_MESSAGES - 3);
    flow.progressed(0);
    await settle();
    expect(admitted).toEqual([1, 2, 3]);
    expect(flow.stats().waiting).toBe(2);
  });

  test("tokens nobody waits for are kept up to one report's worth, then taken without a wait", async () => {
    const { flow, admitted, start, setBacklog } = setup();
    setBacklog(MIN_MARK_MESSAGES + 50);
    flow.progressed(3);
    flow.progressed(7);
    // 3, then 4 more: at most 4 kept.
    for (let n = 1; n <= 5; n++) start(n);
    await settle();
    expect(admitted).toEqual([1, 2, 3, 4]);
    expect(flow.stats()).toEqual({ delayed: 0, delaySeconds: 0, waiting: 1 });
    flow.releaseAll();
    await settle();
    expect(admitted).toEqual([1, 2, 3, 4, 5]);
  });
});
