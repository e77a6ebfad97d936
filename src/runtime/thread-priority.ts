// Per-thread scheduling priority. On Linux every thread is a task with a nice value of its own, so a worker thread
// can yield the cores to the thread that answers clients (the SMTP listener) without touching the rest of the
// process: setpriority(2) with the thread's id changes that thread alone. A thread starts with the nice of the
// thread that created it, so the target is relative to the process (its main thread), never to the caller.
// Elsewhere (no /proc/thread-self) nothing changes. This file is loaded by the parser threads outside tsx too, so
// it uses only erasable TypeScript syntax.
import { readlinkSync, readFileSync } from "node:fs";
import { getPriority, setPriority } from "node:os";

/**
 * Nice added to the process's for threads whose work may wait: the listener's `.` → `250` waits for a core they
 * share, and at +10 the kernel gives a runnable listener about ten times their weight (sched(7)).
 */
export const BACKGROUND_NICE = 10;

/** The Linux thread id of the calling thread ("/proc/thread-self" links to "<pid>/task/<tid>"); undefined elsewhere. */
export function currentThreadId(): number | undefined {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    return Number.isInteger(tid) && tid > 0 ? tid : undefined;
  } catch {
    return undefined;
  }
}

/** The nice value of one thread of this process, read from /proc (field 19 of its stat line, see proc(5)). */
export function threadNice(tid: number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, "latin1");
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[19 - 3]);
}

/**
 * Lowers the calling thread's priority to the process's nice plus `added` (at most 19). It never raises a priority
 * (an unprivileged process could not), so calling it again, or from a thread created by a lowered one, is harmless.
 * Returns the thread's nice afterwards, or undefined where threads have no nice of their own.
 */
export function lowerThreadPriority(added = BACKGROUND_NICE): number | undefined {
  const tid = currentThreadId();
  if (tid === undefined || tid === process.pid) return undefined;
  const target = Math.min(19, getPriority(process.pid) + added);
  try {
    if (getPriority(tid) < target) setPriority(tid, target);
    return getPriority(tid);
  } catch {
    // A sandbox may forbid setpriority: the thread keeps the process's priority, which is only slower to answer.
    return undefined;
  }
}
