// The in-flow delay: Postfix's in_flow_delay, held to the aggregate rate. While accepted mail waiting for processing
// is more than its mark (seconds of storing at the measured storing rate), a new transaction waits at MAIL FROM for a
// token, and tokens come only as processing finishes messages: acceptance falls to the rate storing keeps, for all
// sessions together, instead of each session being slowed by a fixed pause (Postfix's 1 s with 100 sessions still
// admits 100 msg/s more than it delivers). A transaction waits at most maxDelayMs, then goes ahead without a token,
// so no session nears a timeout; the 451 at the backlog's bound stays the last resort. Under the mark nothing waits.
//
// At MAIL FROM because the sender then holds its message: nothing has been read, admitted or stored for it yet.

export interface InFlowOptions {
  /** Backlog, in milliseconds of storing at the measured rate, over which new transactions wait for a token. */
  readonly markMs: number;
  /** Longest one transaction waits; it then goes ahead without a token. */
  readonly maxDelayMs: number;
}

export interface InFlowStats {
  /** Transactions that waited (each counted once its wait ended), and the seconds they waited, since the start. */
  readonly delayed: number;
  readonly delaySeconds: number;
  /** Transactions waiting now. */
  readonly waiting: number;
}

/**
 * A backlog no larger than this is never over the mark: before anything was stored the rate, so the mark in
 * messages, is unknown, and a backlog this small is what the processing thread holds in hand at once
 * (INBOUND_CONCURRENCY × 16: 32 by default, 64 or more only with four or more parser threads) or little more.
 */
export const MIN_MARK_MESSAGES = 100;
/** The storing rate is what was finished over this long. */
const RATE_WINDOW_MS = 2000;

interface Waiter {
  readonly since: number;
  readonly timer: NodeJS.Timeout;
  readonly go: () => void;
}

export class InFlowDelay {
  private readonly waiters: Waiter[] = [];
  private tokens = 0;
  /** Cumulative finished counts with when they were reported; the first is the rate window's start. */
  private samples: { readonly at: number; readonly done: number }[] = [];
  private done = 0;
  private delayed = 0;
  private delayMs = 0;

  constructor(
    private readonly options: InFlowOptions,
    /** Accepted messages not yet finished by processing. */
    private readonly backlog: () => number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.samples.push({ at: now(), done: 0 });
  }

  /** Resolves when a new transaction may go ahead; undefined when it may at once (under the mark, or a token at hand). */
  admit(): Promise<void> | undefined {
    if (!this.over()) return undefined;
    if (this.tokens > 0) {
      this.tokens--;
      return undefined;
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        since: this.now(),
        timer: setTimeout(() => this.let(waiter), this.options.maxDelayMs),
        go: resolve,
      };
      this.waiters.push(waiter);
    });
  }

  /**
   * Processing has finished `done` messages in all (stored, or left to the sweeper): each one since the last call is a
   * token for a waiting transaction, in order of arrival, and so is each message the backlog is under its mark by (so
   * a backlog that fell under it fills up to it, not by every waiting session at once). Tokens nobody waits for are
   * kept, while over the mark, up to one call's worth of finished messages.
   */
  progressed(done: number): void {
    const more = Math.max(0, done - this.done);
    this.done = done;
    this.samples.push({ at: this.now(), done });
    let left = more + Math.max(0, Math.floor(this.markMessages() - this.backlog()));
    while (left > 0 && this.waiters.length > 0) {
      this.let(this.waiters[0]!);
      left--;
    }
    // Under the mark nobody needs one.
    this.tokens = this.over() ? Math.min(this.tokens + left, more) : 0;
  }

  /** Lets every waiting transaction go (the listener stops). */
  releaseAll(): void {
    while (this.waiters.length > 0) this.let(this.waiters[0]!);
  }

  stats(): InFlowStats {
    return { delayed: this.delayed, delaySeconds: this.delayMs / 1000, waiting: this.waiters.length };
  }

  /** Messages finished per second over the last RATE_WINDOW_MS; 0 when nothing was finished in it. */
  storingRate(): number {
    const at = this.now();
    // The window starts at the newest sample older than it, so a rate always spans at least the window.
    while (this.samples.length > 1 && this.samples[1]!.at <= at - RATE_WINDOW_MS) this.samples.shift();
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || at - first.at <= 0) return 0;
    return ((last.done - first.done) * 1000) / Math.max(at - first.at, RATE_WINDOW_MS);
  }

  /** The mark in messages: markMs of storing at the measured rate, never under MIN_MARK_MESSAGES. */
  private markMessages(): number {
    return Math.max(MIN_MARK_MESSAGES, (this.storingRate() * this.options.markMs) / 1000);
  }

  /** Whether the backlog holds more than markMs of storing. */
  private over(): boolean {
    const backlog = this.backlog();
    return backlog > MIN_MARK_MESSAGES && backlog > this.markMessages();
  }

  private let(waiter: Waiter): void {
    const i = this.waiters.indexOf(waiter);
    if (i < 0) return;
    this.waiters.splice(i, 1);
    clearTimeout(waiter.timer);
    this.delayed++;
    this.delayMs += this.now() - waiter.since;
    waiter.go();
  }
}
