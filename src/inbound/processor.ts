// Processing of received mail: raw message → parse (and extract, src/extraction) → one stored Message per admitted
// inbox → raw row deleted. Two units put together here: the pipeline (pipeline.ts: the queue, how many messages are
// read and parsed at once, batching, the memory budget) and the store (store.ts: what preparing and storing a
// message reads and writes, one transaction per batch).
//
// The raw message is read and parsed before the store transaction (a parse may take its whole budget and must hold
// no lock). A parse that fails or exceeds its budget still stores the message from what was parsed (parseProblem
// says why) and keeps the raw row as `failed`, so nothing is lost and an operator can look at the original; an error
// counts a failed attempt, and after a few the raw row is marked failed and left alone.
import { InboundPipeline, type PipelineLimits } from "./pipeline.js";
import { RAW_CHUNK_BYTES, type ReceivedMessage } from "./receive.js";
import { prepareRaw, rawRowOf, recordFailure, StoreClock, storeBatch, type InboundStoreDeps, type ParsedRaw, type RawRow } from "./store.js";

/**
 * What streaming a message from its chunks holds: two readers (the parse and the sender's authentication), each
 * with a chunk read as base64 text (~1.35 times its size; counted as hex's twice, to stay on the safe side) and the
 * chunk itself, and a chunk on its way to the parser.
 */
const STREAM_WINDOW_BYTES = 8 * RAW_CHUNK_BYTES;

/** What the store needs (its clock aside, made here) and the pipeline's limits. */
export interface InboundProcessorDeps extends Omit<InboundStoreDeps, "clock">, PipelineLimits {}

export interface InboundProcessor {
  /**
   * Queues a committed raw message of `size` bytes; the receiving process passes what it committed, so the message
   * is not read back while memory allows (the sweeper passes ids only). False when the queue is full (or the
   * processor stopped): the message is not taken, and the sweeper finds it among the pending rows later. A message
   * already in hand counts as taken.
   */
  submit(rawId: string, size: number, received?: ReceivedMessage): boolean;
  /** Messages taken and not yet done (queued or in hand), and their raw bytes. */
  backlog(): { readonly messages: number; readonly bytes: number };
  /** Stops taking work and waits for what runs (what is parsed is stored); queued ids stay pending in the database. */
  stop(): Promise<void>;
}

export function createInboundProcessor(deps: InboundProcessorDeps): InboundProcessor {
  const { db, log } = deps;
  const store: InboundStoreDeps = { ...deps, clock: new StoreClock() };
  const pipeline = new InboundPipeline<RawRow, ParsedRaw>(
    {
      prepare: (rawId, known) => prepareRaw(store, rawId, known),
      // What the parse yields takes about the message's size, and as much again in the statements that store it
      // (for one inbox; heldBy counts every copy); its bytes are held whole when they are in memory or read from its
      // row (a small message), at most a window of chunks when they are streamed from the database.
      reserve: (size, known) => 2 * size + (known ? size : Math.min(size, STREAM_WINDOW_BYTES)),
      heldBy: (parsed) => parsed.held,
      bytesOf: (parsed) => parsed.bytes,
      store: (batch) => storeBatch(store, batch),
      async failed(rawId, error) {
        log.error("inbound processing failed", { rawId, error });
        await recordFailure(db, rawId, error).catch((e: unknown) => log.error("recording an inbound failure failed", { rawId, error: e }));
      },
    },
    deps,
    log,
  );
  return {
    submit: (rawId, size, received) => pipeline.submit(rawId, size, received && rawRowOf(received)),
    backlog: () => pipeline.backlog(),
    stop: () => pipeline.stop(),
  };
}
