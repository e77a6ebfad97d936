// Processing runs in a worker thread of its own, so the SMTP event loop only receives and commits (commit 1):
// parsing, storing (commit 2), the webhook outbox and scan starts never delay a reply. The thread builds its own
// database pool, Temporal client, outbox and scan starter from the configuration (the smtp role's thread module,
// src/roles/smtp-processing-thread.ts); this side hands it each committed message and learns its backlog, which
// refuses new transactions while it is over its bound (INBOUND_MAX_BACKLOG, INBOUND_MAX_BACKLOG_BYTES) and, over a
// lower mark, delays them so that acceptance keeps to the rate storing keeps (the in-flow delay, in-flow.ts).
//
// Nothing is lost in between: a message is committed before it is handed over, so whatever the thread did not take
// (its queue full, the thread restarting after a crash) stays pending in PostgreSQL for the sweeper.
import { Worker } from "node:worker_threads";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { WebhookAttemptOutcome, WebhookMetrics } from "../metrics/metrics.js";
import { InFlowDelay, type InFlowStats } from "./in-flow.js";
import type { ReceivedMessage } from "./receive.js";
import type { SweeperOptions } from "./sweeper.js";

/** What the thread is started with (structured-cloned: plain data only). */
export interface ProcessingThreadSettings {
  readonly config: Config;
  readonly databaseUrl: string;
  readonly temporalAddress: string;
  readonly sweeper: SweeperOptions;
}

/** A committed message handed to the thread: its bytes too when they were in memory (moved, not shared). */
export interface Submission {
  readonly rawId: string;
  readonly size: number;
  readonly received?: ReceivedMessage;
}

/** Submissions go in groups: what was accepted during one turn of the event loop, in one thread message. */
export type ToProcessing = { readonly type: "submit"; readonly submissions: readonly Submission[] } | { readonly type: "stop" };

export interface ProcessingLoad {
  /** Submissions the thread has read, and their bytes: what was sent after them is not in the figures yet. */
  readonly taken: number;
  readonly takenBytes: number;
  /** Its backlog: messages queued or in hand, and their raw bytes. */
  readonly messages: number;
  readonly bytes: number;
  /** Webhook requests the thread's outbox has sent since it started, by outcome. */
  readonly webhookAttempts: Readonly<Record<WebhookAttemptOutcome, number>>;
}

export type FromProcessing = { readonly type: "ready" } | ({ readonly type: "load" } & ProcessingLoad) | { readonly type: "stopped" };

export interface Processing {
  /**
   * Hands a committed message over; its bytes, when given, are moved to the thread (copied first when they are a
   * view of a larger buffer): the caller must not use them afterwards.
   */
  submit(rawId: string, size: number, received?: ReceivedMessage): void;
  /** Accepted messages (and their raw bytes) handed over or in hand and not yet stored, in this process. */
  backlog(): { readonly messages: number; readonly bytes: number };
  /** Whether the backlog is at or over its bound. */
  overloaded(): boolean;
  /**
   * Resolves when a new transaction may go ahead: later while the backlog is over the in-flow delay's mark (never
   * beyond its longest delay); undefined when it may at once.
   */
  admit(): Promise<void> | undefined;
  /** What the in-flow delay has held back; undefined when it is off (INBOUND_INFLOW_DELAY=off). */
  inFlow(): InFlowStats | undefined;
  /** Stops the thread once what it holds in hand is stored; queued ids stay pending for the sweeper. */
  stop(): Promise<void>;
}

export interface ProcessingOptions extends ProcessingThreadSettings {
  /** The module the thread runs (src/roles/smtp-processing-thread): it builds what processing needs and takes submissions. */
  readonly entry: URL;
  readonly log: Logger;
  /** Where the thread's webhook attempts are counted (it reports them with its load). */
  readonly webhookMetrics?: WebhookMetrics;
}

/** Wait before a crashed thread is started again. */
const RESTART_AFTER_MS = 1000;
export const NO_LOAD: ProcessingLoad = { taken: 0, takenBytes: 0, messages: 0, bytes: 0, webhookAttempts: { delivered: 0, retry: 0, failed: 0 } };

export async function startProcessing(options: ProcessingOptions): Promise<Processing> {
  const { log } = options;
  const { maxBacklogMessages, maxBacklogBytes } = options.config.inbound;
  const settings: ProcessingThreadSettings = {
    config: options.config,
    databaseUrl: options.databaseUrl,
    temporalAddress: options.temporalAddress,
    sweeper: options.sweeper,
  };
  let thread: Worker | null = null;
  let load = NO_LOAD;
  let sent = 0;
  let sentBytes = 0;
  // Messages the threads have finished (stored, or left to the sweeper), over every thread this process started.
  let finished = 0;
  const inFlow = configuredInFlowDelay(options.config, () => backlog().messages);
  let stopping = false;
  let restart: NodeJS.Timeout | undefined;
  const handOver = new HandOver((message, transfers) => {
    if (!thread) throw new Error("no processing thread");
    thread.postMessage(message, transfers);
  }, log);

  /** A started thread, once it reports ready; rejects when it fails to start. */
  function spawn(): Promise<Worker> {
    const worker = new Worker(options.entry, { workerData: settings });
    return new Promise((resolve, reject) => {
      const failed = (e: Error) => {
        worker.off("message", ready).off("exit", exited);
        void worker.terminate();
        reject(e);
      };
      const exited = (code: number) => failed(new Error(`the processing thread exited with ${code} while starting`));
      const ready = (message: FromProcessing) => {
        if (message.type !== "ready") return;
        worker.off("message", ready).off("error", failed).off("exit", exited);
        resolve(worker);
      };
      worker.on("message", ready).once("error", failed).once("exit", exited);
    });
  }

  function adopt(worker: Worker): void {
    thread = worker;
    // Anything not handed to the thread before stays pending in the database for the new thread's sweeper.
    handOver.drop();
    sent = 0;
    sentBytes = 0;
    load = NO_LOAD;
    worker.on("message", (message: FromProcessing) => {
      if (message.type !== "load") return;
      for (const [outcome, n] of Object.entries(message.webhookAttempts) as [WebhookAttemptOutcome, number][]) {
        const more = n - load.webhookAttempts[outcome];
        if (more > 0) options.webhookMetrics?.attempted(outcome, more);
      }
      finished += Math.max(0, message.taken - message.messages - (load.taken - load.messages));
      load = message;
      inFlow?.progressed(finished);
    });
    worker.on("error", (error) => log.error("the processing thread failed", { error }));
    worker.once("exit", (code) => {
      if (thread === worker) thread = null;
      if (stopping) return;
      // What it held is pending in the database: the new thread's sweeper finds it.
      log.error("the processing thread exited; starting it again", { code });
      restartLater();
    });
  }

  function restartLater(): void {
    restart = setTimeout(() => {
      spawn().then(
        (next) => (stopping ? void next.terminate() : adopt(next)),
        (error: unknown) => {
          log.error("the processing thread did not start again", { error });
          if (!stopping) restartLater();
        },
      );
    }, RESTART_AFTER_MS);
  }

  adopt(await spawn());

  function backlog() {
    return { messages: load.messages + (sent - load.taken), bytes: load.bytes + (sentBytes - load.takenBytes) };
  }

  return {
    submit(rawId, size, received) {
      if (!thread) return;
      handOver.add(rawId, size, received);
      sent++;
      sentBytes += size;
    },
    backlog,
    overloaded() {
      const { messages, bytes } = backlog();
      return messages >= maxBacklogMessages || bytes >= maxBacklogBytes;
    },
    admit: () => inFlow?.admit(),
    inFlow: () => inFlow?.stats(),
    async stop() {
      stopping = true;
      inFlow?.releaseAll();
      clearTimeout(restart);
      handOver.flush();
      const worker = thread;
      if (!worker) return;
      const stopped = new Promise<void>((resolve) => {
        worker.on("message", (message: FromProcessing) => message.type === "stopped" && resolve());
        worker.once("exit", () => resolve());
      });
      worker.postMessage({ type: "stop" } satisfies ToProcessing);
      await stopped;
      await worker.terminate();
    },
  };
}

/** The in-flow delay as configured, or undefined when it is off. */
function configuredInFlowDelay(config: Config, backlog: () => number): InFlowDelay | undefined {
  const { enabled, markMs, maxDelayMs } = config.inbound.inFlow;
  // A wait past half the idle timeout would risk the listener's own 421 for a silent session.
  return enabled ? new InFlowDelay({ markMs, maxDelayMs: Math.min(maxDelayMs, config.smtp.idleTimeoutMs / 2) }, backlog) : undefined;
}

/**
 * The submissions of one turn of the event loop, handed to the thread together once it ends: a thread message costs
 * both threads a wake-up and a (de)serialization whatever it carries.
 */
class HandOver {
  private submissions: Submission[] = [];
  private transfers: ArrayBuffer[] = [];
  private scheduled: NodeJS.Immediate | undefined;

  constructor(
    private readonly post: (message: ToProcessing, transfers: ArrayBuffer[]) => void,
    private readonly log: Logger,
  ) {}

  add(rawId: string, size: number, received: ReceivedMessage | undefined): void {
    if (received) {
      // Moved to the thread: the bytes themselves when they own their memory whole (DATA in several chunks, joined
      // into a buffer of its own), which spares the listener a message-sized allocation and copy; else a copy of
      // exactly them (a view of a larger buffer).
      const { raw: bytes } = received;
      const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
      const raw = owned ? new Uint8Array(bytes.buffer) : new Uint8Array(bytes);
      this.submissions.push({ rawId, size, received: { ...received, raw: raw as Buffer } });
      this.transfers.push(raw.buffer);
    } else {
      this.submissions.push({ rawId, size });
    }
    this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Hands what was added over now, in one message. */
  flush(): void {
    clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const { submissions, transfers } = this;
    this.drop();
    if (submissions.length === 0) return;
    try {
      this.post({ type: "submit", submissions }, transfers);
    } catch (error) {
      // Never an error after the commit (the sender would be told to retry what is stored): the sweeper takes them.
      this.log.warn("handing messages to processing failed; the sweeper takes them", { messages: submissions.length, error });
    }
  }

  /** Forgets what was added (it stays pending in the database for the sweeper). */
  drop(): void {
    this.submissions = [];
    this.transfers = [];
  }
}
