// SIGTERM's budget (SHUTDOWN_TIMEOUT_MS). What is in flight — API requests, SMTP transactions, activities — gets a
// third of it, and the worker waits twice (its SMTP attempts, then its other activities); the rest is for telling
// late SMTP sessions 421 and closing pools and connections. Past the whole of it the process exits anyway
// (src/cli/main.ts).
export function drainGraceMs(shutdownTimeoutMs: number): number {
  return Math.floor(shutdownTimeoutMs / 3);
}

/** Work that a drain waits for, counted while it runs, and cut when the drain gives up on it. */
export interface InFlight {
  /** Runs `work` counted; its signal aborts when the drain gives up (abort()). */
  run<T>(work: (cut: AbortSignal) => Promise<T>): Promise<T>;
  /** Resolves once nothing runs, or after `graceMs`. */
  settled(graceMs: number): Promise<void>;
  /** Aborts what still runs. */
  abort(): void;
}

export function createInFlight(): InFlight {
  // A controller per run, not one shared signal: AbortSignal.any() over a long-lived signal keeps every combined
  // signal that has a listener (nodemailer adds one) for as long as the long-lived one lives (nodejs/node#64476).
  const running = new Set<AbortController>();
  const waiting = new Set<() => void>();
  let cutReason: Error | undefined;
  return {
    async run(work) {
      const cut = new AbortController();
      if (cutReason) cut.abort(cutReason);
      running.add(cut);
      try {
        return await work(cut.signal);
      } finally {
        running.delete(cut);
        if (running.size === 0) for (const wake of waiting) wake();
      }
    },
    async settled(graceMs) {
      if (running.size === 0) return;
      let wake!: () => void;
      const idle = new Promise<void>((resolve) => waiting.add((wake = resolve)));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([idle, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      waiting.delete(wake);
    },
    abort() {
      cutReason = new Error("the worker is shutting down");
      for (const cut of running) cut.abort(cutReason);
    },
  };
}
