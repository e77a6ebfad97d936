// Per-thread nice on Linux: read back from /proc, for a thread of our own and for the parser's real threads.
import { readdirSync, readFileSync } from "node:fs";
import { getPriority } from "node:os";
import { Worker } from "node:worker_threads";
import { describe, expect, test } from "vitest";
import { createEmailParser, PARSER_THREAD_NAME } from "../../src/mail/parse.js";
import { BACKGROUND_NICE, currentThreadId, lowerThreadPriority, threadNice } from "../../src/runtime/thread-priority.js";

const MODULE = new URL("../../src/runtime/thread-priority.ts", import.meta.url).href;
const processNice = getPriority(process.pid);
const expected = Math.min(19, processNice + BACKGROUND_NICE);

interface Report {
  readonly tid: number;
  readonly first: number;
  readonly again: number;
  readonly child: { readonly tid: number; readonly nice: number };
}

/**
 * A worker that lowers itself twice, then starts a worker of its own (which starts with its creator's nice) that
 * lowers itself too; each reports its thread id and its nice as the module sees it.
 */
const LOWERING = `
const { parentPort, Worker } = await import("node:worker_threads");
const { currentThreadId, lowerThreadPriority } = await import(${JSON.stringify(MODULE)});
const tid = currentThreadId();
const first = lowerThreadPriority();
const again = lowerThreadPriority();
const childCode = "const m = await import(" + JSON.stringify(${JSON.stringify(MODULE)}) + "); const { parentPort } = await import('node:worker_threads'); parentPort.postMessage({ tid: m.currentThreadId(), nice: m.lowerThreadPriority() }); await new Promise((r) => parentPort.once('message', r));";
const child = new Worker(new URL("data:text/javascript," + encodeURIComponent(childCode)));
child.once("message", (report) => {
  parentPort.postMessage({ tid, first, again, child: report });
  parentPort.once("message", () => child.postMessage("end"));
});
`;

/** The parser's threads in this process (named so, as `ps -L` shows them). */
function parserThreads(): Set<number> {
  const tids = new Set<number>();
  for (const tid of readdirSync("/proc/self/task")) {
    const comm = readFileSync(`/proc/self/task/${tid}/comm`, "latin1").trim();
    if (comm === PARSER_THREAD_NAME) tids.add(Number(tid));
  }
  return tids;
}

describe.runIf(process.platform === "linux")("a thread's priority", () => {
  test("is lowered for the calling thread alone, as /proc reads it back, once however often it is asked and by whom", async () => {
    const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(LOWERING)}`));
    try {
      const report = await new Promise<Report>((resolve, reject) => worker.once("message", resolve).once("error", reject));
      expect(report.tid).not.toBe(process.pid);
      expect([report.first, report.again, report.child.nice]).toEqual([expected, expected, expected]);
      // Read by this thread, from /proc: the kernel's value, not the module's report of it.
      expect(threadNice(report.tid)).toBe(expected);
      expect(threadNice(report.child.tid)).toBe(expected);
      expect(threadNice(process.pid)).toBe(processNice);
      worker.postMessage("end");
    } finally {
      await worker.terminate();
    }
  });

  test("is left alone on the main thread", () => {
    expect(currentThreadId()).toBe(process.pid);
    expect(lowerThreadPriority()).toBeUndefined();
    expect(threadNice(process.pid)).toBe(processNice);
  });

  test("of the parser's threads is lowered as they start", async () => {
    const before = parserThreads();
    const parser = createEmailParser({ timeoutMs: 10_000, memoryMb: 64, workers: 2, maxHeaderBytes: 65_536, maxMimeParts: 100 });
    try {
      const raw = Buffer.from("From: a@example.org\r\nTo: b@example.org\r\nSubject: hi\r\n\r\nhello\r\n");
      await Promise.all([parser.parse(raw), parser.parse(raw)]);
      const started = [...parserThreads()].filter((tid) => !before.has(tid));
      expect(started.length).toBeGreaterThanOrEqual(2);
      expect(started.map(threadNice)).toEqual(started.map(() => expected));
    } finally {
      await parser.close();
    }
  });
});
