// The inbound pipeline: the mechanism that takes committed raw messages from a queue, prepares (reads and parses) a
// bounded number at once, and hands what is ready to the store in batches. What preparing and storing do is the
// caller's (store.ts); this file decides only when, how many and in which order.
//
// Batches: when no store runs, a batch starts GATHER_MS after its first message was ready at most while others are
// being prepared, LINGER_MS at most while nothing is but the pace of submissions says the next is on its way, and
// at once otherwise, so a message alone never waits and a steady stream at a moderate rate still shares its
// commits; meanwhile the next batch fills while one is stored (it starts early only when full). A batch that fails is
// stored again one message at a time, so a bad message fails alone.
//
// Memory is bounded in bytes (memoryBytes), half for each side: the raw bytes of messages queued with them, and
// what the messages in hand hold — while one is prepared, what the stages reserve for it (its bytes and what the
// parse will yield), then what it really holds once prepared, until it is stored (a larger message is taken alone).
// A message queued beyond its half keeps only its id and size and is read back when its turn comes; the halves keep
// a long queue of bytes from holding back the messages in hand. The queue itself holds at most maxQueued ids;
// beyond it messages wait in PostgreSQL for the sweeper.
import type { Logger } from "../logger.js";

/** What the pipeline runs, per message and per batch. */
export interface PipelineStages<Known, Ready> {
  /** Reads (unless known) and parses a message; null when it is no longer pending (nothing to store). */
  prepare(rawId: string, known: Known | undefined): Promise<Ready | null>;
  /** What preparing a message of `size` bytes may hold at most, its bytes known (in memory) or to be read. */
  reserve(size: number, known: boolean): number;
  /** What a prepared message holds until it is stored. */
  heldBy(ready: Ready): number;
  /** Its weight in a batch (the raw bytes of every copy it stores). */
  bytesOf(ready: Ready): number;
  /** Stores a batch in one transaction, in the order the messages were submitted; throws when it fails. */
  store(batch: readonly Ready[]): Promise<void>;
  /** Records a failed attempt at one message (never throws). */
  failed(rawId: string, error: unknown): Promise<void>;
}

export interface PipelineLimits {
  /** Messages read and parsed at once (parsing is bounded separately by the parser's worker threads). */
  readonly concurrency: number;
  /** Bytes held at once: queued with their bytes, preparing, ready and storing (INBOUND_PROCESSING_MEMORY_BYTES). */
  readonly memoryBytes: number;
  /** Ids queued at most; beyond, messages wait in the database for the sweeper. */
  readonly maxQueued: number;
}

/** Messages per store transaction at most. */
const MAX_BATCH_MESSAGES = 64;
/** Message bytes (times inbox copies) per store transaction at most; a larger message goes alone. */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;
/** Store transactions at once: one storing, the next filling (it starts early only when full). */
const MAX_STORING = 2;
/**
 * How long a ready message may wait, when no store runs, for the messages still being prepared to join its batch. A
 * batch costs a commit and five round trips whatever its size (bench:inbound-store, 10 KB messages: PostgreSQL ~2 ms
 * and this thread ~1.5 ms of CPU for a batch of one, ~0.5 and ~0.2 ms per message in a batch of 64), and at a few
 * hundred messages a second a store ends before the next message is parsed, so without the wait every batch is one.
 */
const GATHER_MS = 20;
/**
 * How long a ready message may wait, when no store runs and nothing else is being prepared, for a message the pace
 * of submissions says is on its way. At moderate rates (a message every few milliseconds) each message was parsed and
 * stored before the next was submitted, so every batch was one and paid a commit alone; this bounds what a message
 * waits for company (it counts in the time from 250 to stored).
 */
const LINGER_MS = 10;
/** Submissions whose times make the pace: the mean gap between the latest of them. */
const PACE_SUBMISSIONS = 4;

/** A message waiting to be taken: what is known of it too when it was passed and memory allowed. */
interface Queued<Known> {
  readonly seq: number;
  readonly size: number;
  readonly known: Known | undefined;
}

/** A prepared message waiting to be stored. */
interface ReadyItem<Ready> {
  readonly rawId: string;
  /** Order of submission: a batch stores its messages in the order they were received. */
  readonly seq: number;
  readonly ready: Ready;
  /** What it adds to a batch's statements. */
  readonly bytes: number;
}

export class InboundPipeline<Known, Ready> {
  private readonly queued = new Map<string, Queued<Known>>();
  /** Sizes of every queued message, and of those queued with what is known of them. */
  private queuedBytes = 0;
  private queuedKnownBytes = 0;
  private submitted = 0;
  /** Ids taken off the queue and not done yet (preparing, ready or storing), with their sizes and what each holds. */
  private readonly inHand = new Map<string, { readonly size: number; held: number }>();
  private inHandSizes = 0;
  private inHandHeld = 0;
  private preparing = 0;
  private readonly ready: ReadyItem<Ready>[] = [];
  private readyBytes = 0;
  /** When the oldest ready message became ready (performance.now()), and the wait for others to join it. */
  private readySince = 0;
  private gatherTimer: NodeJS.Timeout | undefined;
  /** When the gather timer fires (performance.now()). */
  private gatherAt = 0;
  /** When the latest PACE_SUBMISSIONS submissions came (performance.now()), oldest first. */
  private readonly submittedAt: number[] = [];
  private storing = 0;
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly stages: PipelineStages<Known, Ready>,
    private readonly limits: PipelineLimits,
    private readonly log: Logger,
  ) {}

  /**
   * Queues a message of `size` bytes; what is known of it is kept while memory allows. False when the queue is full
   * (or the pipeline stopped): the message is not taken. A message already in hand counts as taken.
   */
  submit(rawId: string, size: number, known?: Known): boolean {
    if (this.inHand.has(rawId) || this.queued.has(rawId)) return true;
    if (this.stopped || this.queued.size >= this.limits.maxQueued) return false;
    this.submittedAt.push(performance.now());
    if (this.submittedAt.length > PACE_SUBMISSIONS) this.submittedAt.shift();
    const keep = known !== undefined && this.queuedKnownBytes + size <= this.limits.memoryBytes / 2;
    this.queued.set(rawId, { seq: this.submitted++, size, known: keep ? known : undefined });
    this.queuedBytes += size;
    if (keep) this.queuedKnownBytes += size;
    this.pump();
    return true;
  }

  /** Messages taken and not yet done (queued or in hand), and their raw bytes. */
  backlog(): { readonly messages: number; readonly bytes: number } {
    return { messages: this.queued.size + this.inHand.size, bytes: this.queuedBytes + this.inHandSizes };
  }

  /** Stops taking work and waits for what runs (what is prepared is stored); queued ids are dropped. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queued.clear();
    this.queuedBytes = 0;
    this.queuedKnownBytes = 0;
    // What gathers is stored now.
    this.stopGathering();
    this.flush();
    // A store started by a preparation that ends now is waited for too.
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private track(work: Promise<void>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  /** A full batch is ready: no more preparing until it is stored (bounds memory), and it needs no store to end. */
  private readyIsFull(): boolean {
    return this.ready.length >= MAX_BATCH_MESSAGES || this.readyBytes >= MAX_BATCH_BYTES;
  }

  /** Whether a queued message may be taken now: what is held in hand stays within its half, or it goes alone. */
  private fits(reserved: number): boolean {
    return this.inHandHeld === 0 || this.inHandHeld + reserved <= this.limits.memoryBytes / 2;
  }

  private take(rawId: string, size: number, reserved: number): void {
    this.inHand.set(rawId, { size, held: reserved });
    this.inHandSizes += size;
    this.inHandHeld += reserved;
  }

  /** What a message in hand holds now that it is prepared. */
  private hold(rawId: string, held: number): void {
    const entry = this.inHand.get(rawId)!;
    this.inHandHeld += held - entry.held;
    entry.held = held;
  }

  private release(rawId: string): void {
    const entry = this.inHand.get(rawId);
    if (!entry) return;
    this.inHandSizes -= entry.size;
    this.inHandHeld -= entry.held;
    this.inHand.delete(rawId);
  }

  private pump(): void {
    for (const [rawId, { seq, size, known }] of this.queued) {
      if (this.stopped || this.preparing >= this.limits.concurrency || this.readyIsFull()) return;
      const reserved = this.stages.reserve(size, known !== undefined);
      if (!this.fits(reserved)) return;
      this.queued.delete(rawId);
      this.queuedBytes -= size;
      if (known !== undefined) this.queuedKnownBytes -= size;
      this.take(rawId, size, reserved);
      this.preparing++;
      this.track(this.prepare(rawId, seq, known).finally(() => this.pump()));
    }
  }

  private async prepare(rawId: string, seq: number, known: Known | undefined): Promise<void> {
    let ready: Ready | null;
    try {
      ready = await this.stages.prepare(rawId, known);
    } catch (error) {
      ready = null;
      await this.stages.failed(rawId, error);
    } finally {
      this.preparing--;
    }
    if (ready === null) {
      // The batch gathering may have waited for this one only.
      this.flush();
      this.release(rawId);
      return;
    }
    this.hold(rawId, this.stages.heldBy(ready));
    const bytes = this.stages.bytesOf(ready);
    if (this.ready.length === 0) this.readySince = performance.now();
    this.ready.push({ rawId, seq, ready, bytes });
    this.readyBytes += bytes;
    this.flush();
  }

  private flush(): void {
    while (this.ready.length > 0 && (this.storing === 0 || (this.storing < MAX_STORING && this.readyIsFull()))) {
      if (this.storing === 0 && this.gathering()) return;
      this.stopGathering();
      const batch = this.takeBatch();
      this.storing++;
      this.track(
        this.storeOrIsolate(batch).finally(() => {
          this.storing--;
          for (const item of batch) this.release(item.rawId);
          this.flush();
          this.pump();
        }),
      );
    }
  }

  /**
   * Whether the next batch waits for messages being prepared (GATHER_MS after its first was ready at most) or, with
   * none, for one the pace of submissions expects (LINGER_MS at most); the timer that ends the wait is set.
   */
  private gathering(): boolean {
    if (this.stopped || this.readyIsFull()) return false;
    const wait = this.preparing > 0 ? GATHER_MS : this.nextExpectedWithin(this.readySince + LINGER_MS) ? LINGER_MS : 0;
    const until = this.readySince + wait;
    const now = performance.now();
    if (now >= until) return false;
    if (this.gatherTimer === undefined || this.gatherAt !== until) {
      clearTimeout(this.gatherTimer);
      this.gatherAt = until;
      this.gatherTimer = setTimeout(() => {
        this.gatherTimer = undefined;
        this.flush();
      }, until - now);
    }
    return true;
  }

  private stopGathering(): void {
    clearTimeout(this.gatherTimer);
    this.gatherTimer = undefined;
  }

  /**
   * Whether the next submission is due before `deadline` and not overdue: the latest plus the mean gap between the
   * latest PACE_SUBMISSIONS. A first message, one after a pause (a long gap), and the last of a group submitted at
   * once (no gap, so due already) do not wait; a steady stream does, its jitter allowed up to a second gap.
   */
  private nextExpectedWithin(deadline: number): boolean {
    const times = this.submittedAt;
    if (times.length < PACE_SUBMISSIONS) return false;
    const last = times.at(-1)!;
    const meanGap = (last - times[0]!) / (times.length - 1);
    return last + meanGap < deadline && performance.now() < last + 2 * meanGap;
  }

  private takeBatch(): ReadyItem<Ready>[] {
    let count = 0;
    let bytes = 0;
    const { ready } = this;
    while (count < ready.length && count < MAX_BATCH_MESSAGES && (count === 0 || bytes + ready[count]!.bytes <= MAX_BATCH_BYTES)) {
      bytes += ready[count]!.bytes;
      count++;
    }
    this.readyBytes -= bytes;
    // Preparations finish out of order; a reply received after its parent must come after it to join its thread.
    return ready.splice(0, count).sort((a, b) => a.seq - b.seq);
  }

  private async storeOrIsolate(batch: readonly ReadyItem<Ready>[]): Promise<void> {
    try {
      await this.stages.store(batch.map((item) => item.ready));
    } catch (error) {
      if (batch.length === 1) return this.stages.failed(batch[0]!.rawId, error);
      // Whatever failed (a message the database refuses, a deadlock), one message must not hold back the others:
      // each is stored alone, and only a message that fails alone counts a failed attempt.
      this.log.warn("inbound batch failed; storing its messages one at a time", { messages: batch.length, error });
      for (const item of batch) await this.storeOrIsolate([item]);
    }
  }
}
