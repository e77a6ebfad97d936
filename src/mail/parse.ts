// The mail parser adapter: our own ParsedEmail type, produced by mailparser (in maintenance mode upstream, so it
// stays behind this file; the common shape, one text part or an alternative of them, is parsed from mailparser's own
// pieces without its streams: direct-parse.ts). Parsing untrusted MIME can take unbounded time and memory, so it runs in worker
// threads with a heap limit and a deadline: a job that blows the budget costs only its worker, the rest of the
// process (the SMTP listener above all) stays responsive, and the message is still stored from what did parse.
// One job per message: the worker parses it (whole, or streamed from its stored chunks, a chunk or two held at a
// time), then extracts from it (reply text, codes, links, and the safety analysis, which reads the sender's
// authentication the job carries: src/extraction), then makes text from the HTML of an HTML-only message. Each stage answers as it ends and has a budget of its own, so hostile HTML that makes
// extraction or text-making slow or large costs that stage only, never the parsed message; the message crosses
// between threads once each way.
import { Worker } from "node:worker_threads";
import type { Extracted, SenderAuthentication } from "../extraction/index.js";
import { reclaimWhenIdle } from "../runtime/idle-reclaim.js";
import { siblingModule } from "../runtime/sibling-module.js";
import { headerEnd } from "./header-section.js";

export interface ParsedAddress {
  readonly email: string;
  readonly name?: string;
}

export interface ParsedAttachment {
  /** The sender's filename, untrusted and unsanitised; null when the part has none. */
  readonly filename: string | null;
  /** The declared content type, untrusted. */
  readonly contentType: string;
  readonly content: Uint8Array;
}

export interface ParsedEmail {
  /** The Message-ID in angle brackets, or null when the message has none. */
  readonly messageId: string | null;
  readonly inReplyTo: string | null;
  /** References, oldest first. */
  readonly references: readonly string[];
  readonly subject: string;
  readonly from: ParsedAddress | null;
  readonly to: readonly ParsedAddress[];
  readonly cc: readonly ParsedAddress[];
  readonly replyTo: ParsedAddress | null;
  /** The text parts; for a message with HTML only, text made from the HTML. */
  readonly text: string;
  /** The HTML body as sent (never generated from the text), or null. */
  readonly html: string | null;
  readonly attachments: readonly ParsedAttachment[];
  /** Why the result is partial (budget exceeded, malformed MIME), or null when the parse was complete. */
  readonly problem: string | null;
  /** What extraction read out of it; null when extraction failed or exceeded its budget. */
  readonly extracted: Extracted | null;
}

/** What the message job yields: the parsed message, before extraction. */
export type ParsedMessage = Omit<ParsedEmail, "extracted">;

export interface EmailParserOptions {
  readonly timeoutMs: number;
  readonly memoryMb: number;
  /** Worker threads, i.e. parse jobs at once. */
  readonly workers: number;
  /** The limits the SMTP session enforced, so the parser never fails a message the server accepted. */
  readonly maxHeaderBytes: number;
  readonly maxMimeParts: number;
}

/**
 * A raw message read as a stream: its chunks in order, read afresh at each call (a message whose parse failed is
 * read again for its header section). The parser holds a chunk or two of it at a time.
 */
export interface RawChunks {
  chunks(): AsyncIterable<Uint8Array>;
}

/** A raw message whole in memory, or as a stream of chunks. */
export type RawInput = Uint8Array | RawChunks;

export interface ParseOptions {
  /**
   * What sender authentication found (null or absent: not evaluated), for the safety analysis. It is known before the
   * parse starts, so a parser worker never waits on the sender's DNS.
   */
  readonly authentication?: SenderAuthentication | null;
}

export interface EmailParser {
  /**
   * A parse that fails or exceeds its budget yields what did parse (at least the headers), with `problem` set; an
   * extraction that does yields `extracted` null. Rejects only when no parse can run at all (a worker cannot start,
   * the parser is closed) or a streamed message cannot be read.
   */
  parse(raw: RawInput, options?: ParseOptions): Promise<ParsedEmail>;
  close(): Promise<void>;
}

/** Settings of one worker (its workerData). */
export interface ParseWorkerSettings {
  readonly maxHeaderBytes: number;
  readonly maxMimeParts: number;
  /**
   * false: every message goes through mailparser, none is parsed directly (src/mail/direct-parse.ts). Only the
   * differential test and bench:parse set it, to compare the two.
   */
  readonly directParse?: boolean;
}

/**
 * A job for a worker. `message` parses a message (whole, or from the `chunk`s that follow it, each asked for with
 * `more`, then `end`) and answers in stages: `parsed`, then `extracted` (with the sender's `authentication`), then
 * — for a message with HTML only — `text` made from the HTML, the costly part, last, so that blowing the budget on
 * it keeps the rest. `html-to-text` makes that text alone, for a message whose worker was lost before.
 */
export type ToParseWorker =
  | { readonly kind: "message"; readonly raw: Uint8Array | null; readonly authentication: SenderAuthentication | null }
  | { readonly kind: "chunk"; readonly bytes: Uint8Array }
  | { readonly kind: "end" }
  | { readonly kind: "html-to-text"; readonly html: string };

export type FromParseWorker =
  | { readonly kind: "more" }
  | { readonly kind: "parsed"; readonly result: ParseWorkerResult<ParsedMessage> }
  | { readonly kind: "extracted"; readonly result: ParseWorkerResult<Extracted>; readonly trimmedText?: TrimmedText }
  | { readonly kind: "text"; readonly result: ParseWorkerResult<DerivedText> };

/**
 * Which of an extraction's texts a worker left out (sent as ""): those that are the parsed text trimmed, as most
 * plain-text mail's reply text and safe text are. The parsed message carried that text already, so a 10 KB message
 * crosses to the parent once, not three times.
 */
export interface TrimmedText {
  readonly replyText: boolean;
  readonly safeText: boolean;
}

export interface DerivedText {
  readonly text: string;
  readonly problem: string | null;
}

export type ParseWorkerResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/** What one job yielded, stage by stage, and why it ended before its last stage if it did. */
interface JobOutcome {
  readonly parsed?: ParseWorkerResult<ParsedMessage>;
  readonly extracted?: ParseWorkerResult<Extracted>;
  readonly text?: ParseWorkerResult<DerivedText>;
  /** The worker was lost (time or memory budget, a crash) at the stage it was at. */
  readonly lost?: string;
}

/** Time allowed to parse the bounded header section after the whole message overran its budget. */
const HEADER_PARSE_BUDGET_MS = 2_000;
/**
 * A worker that parsed a message larger than this is ended once it has been idle for RECYCLE_IDLE_MS: its heap and
 * buffers grew for that message and go back to the system with it, instead of staying with the process. Not at
 * once: a fresh worker loads its modules and runs mailparser cold (unoptimised) on its first message, which cost
 * more CPU than the parse of a 9 MB message itself, so during a burst of large mail the warm worker goes on.
 */
const RECYCLE_AFTER_BYTES = 1024 * 1024;
/**
 * How long a worker grown by a large message may stay idle before it is ended (see RECYCLE_AFTER_BYTES). At one
 * second, a loaded machine (load average 20 on two cores) still started a fresh worker for one 9 MB message in four.
 */
const RECYCLE_IDLE_MS = 5_000;

/**
 * The young generation of a parser thread at most. A worker now stays warm through a burst of large mail, holding
 * what its young generation grew to: at 8 MB instead of 64, two workers parsing 9 MB messages peaked ~30 MB lower
 * (RSS of the parsing process), at the same CPU per message and per 10 KB message (noise ±10%).
 */
const YOUNG_GENERATION_MB = 8;

/** The name of the parser threads, as the system shows them. */
export const PARSER_THREAD_NAME = "mail-parser";

const WORKER_URL = siblingModule("./parse-worker", import.meta.url);

export function createEmailParser(options: EmailParserOptions): EmailParser {
  const workers = new ParseWorkers(options);
  return {
    async parse(raw, parseOptions = {}) {
      const authentication = parseOptions.authentication ?? null;
      const job = await workers.run(raw, authentication);
      // A message that did not parse whole is stored from its header section: extraction reads what that yields.
      const { parsed, extracted } = job.parsed?.ok
        ? { parsed: job.parsed.value, extracted: job.extracted }
        : await headersOnly(workers, options, raw, authentication, job.parsed?.ok === false ? job.parsed.error : job.lost!);
      const email = await withText(workers, parsed, job);
      return { ...email, extracted: extracted?.ok ? extracted.value : null };
    },
    close: () => workers.close(),
  };
}

/** A job and, for a streamed message, the chunks that follow it. */
interface Feed {
  readonly job: ToParseWorker;
  /** The chunks that follow a streamed message, null when it went whole. */
  readonly chunks: AsyncIterator<Uint8Array> | null;
}

/** The worker threads: as many jobs at once as workers, each worker reused until a job blows its budget. */
class ParseWorkers {
  private readonly idle: Worker[] = [];
  /** Workers that parsed a large message since they started: ended once idle, whatever they parse meanwhile. */
  private readonly grown = new Set<Worker>();
  /** The timers that end idle workers grown by a large message. */
  private readonly recycling = new Map<Worker, NodeJS.Timeout>();
  private free: number;
  private readonly queue: (() => void)[] = [];
  private closed = false;

  constructor(private readonly options: EmailParserOptions) {
    this.free = options.workers;
  }

  /** Runs a message job, or `html-to-text`, on a worker; each stage within its time budget (the parser's unless given). */
  async run(
    input: RawInput | { readonly html: string },
    authentication: SenderAuthentication | null = null,
    timeoutMs = this.options.timeoutMs,
  ): Promise<JobOutcome> {
    await this.slot();
    let chunks: AsyncIterator<Uint8Array> | null = null;
    try {
      const worker = this.idle.pop() ?? (await this.spawn());
      clearTimeout(this.recycling.get(worker));
      this.recycling.delete(worker);
      let job: ToParseWorker;
      if ("html" in input) job = { kind: "html-to-text", html: input.html };
      else if (input instanceof Uint8Array) job = { kind: "message", raw: input, authentication };
      else {
        job = { kind: "message", raw: null, authentication };
        chunks = input.chunks()[Symbol.asyncIterator]();
      }
      const ran = await runJob(worker, { job, chunks }, timeoutMs).catch(async (e: unknown) => {
        await worker.terminate();
        throw e;
      });
      // A worker that is ended (its budget blown) is gone before its slot goes to the next job: never more parser
      // heaps at once than slots, however fast large messages come.
      if (ran.fed > RECYCLE_AFTER_BYTES) {
        this.grown.add(worker);
        // The message's bytes and parts passed through this thread too: its garbage goes once the burst is over.
        reclaimWhenIdle();
      }
      if (!ran.reusable || this.closed) {
        this.grown.delete(worker);
        await worker.terminate();
      } else {
        this.idle.push(worker);
        if (this.grown.has(worker)) this.recycleWhenIdle(worker);
      }
      return ran.outcome;
    } finally {
      await chunks?.return?.();
      this.freeSlot();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.recycling.values()) clearTimeout(timer);
    this.recycling.clear();
    this.grown.clear();
    for (const wake of this.queue.splice(0)) wake();
    await Promise.all(this.idle.splice(0).map((w) => w.terminate()));
  }

  /**
   * Ends the worker if it is still idle RECYCLE_IDLE_MS from now. It takes a free slot while it ends (an idle worker
   * holds none, and workers never outnumber slots, so one is free; if not, it tries again later), so that, as for a
   * blown budget, its heap is gone before the slot can start another.
   */
  private recycleWhenIdle(worker: Worker): void {
    const timer = setTimeout(() => {
      this.recycling.delete(worker);
      const at = this.idle.indexOf(worker);
      if (at === -1 || this.closed) return;
      if (this.free === 0) return this.recycleWhenIdle(worker);
      this.idle.splice(at, 1);
      this.grown.delete(worker);
      this.free -= 1;
      void worker.terminate().finally(() => this.freeSlot());
    }, RECYCLE_IDLE_MS);
    timer.unref();
    this.recycling.set(worker, timer);
  }

  /** A slot for one job; there are as many as workers. */
  private async slot(): Promise<void> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((resolve) => this.queue.push(resolve));
    if (this.closed) throw new Error("the parser is closed");
  }

  private freeSlot(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.free += 1;
  }

  /** A started worker; its start-up (loading mailparser) does not count against a job's time budget. */
  private spawn(): Promise<Worker> {
    const { maxHeaderBytes, maxMimeParts, memoryMb } = this.options;
    const worker = new Worker(WORKER_URL, {
      // The OS thread's name too (ps -L, top -H, /proc/<pid>/task/*/comm): its CPU and memory can be told apart.
      name: PARSER_THREAD_NAME,
      workerData: { maxHeaderBytes, maxMimeParts } satisfies ParseWorkerSettings,
      resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: Math.min(YOUNG_GENERATION_MB, Math.ceil(memoryMb / 4)) },
    });
    worker.unref();
    // An error after a job gave up on the worker (out of memory while being terminated) must not go unheard:
    // an unhandled 'error' event would end the whole process.
    worker.on("error", () => undefined);
    return new Promise((resolve, reject) => {
      const fail = (e: Error) => {
        worker.off("message", ready);
        reject(e);
      };
      const exited = () => fail(new Error("the parser worker exited while starting"));
      const ready = () => {
        worker.off("error", fail).off("exit", exited);
        resolve(worker);
      };
      worker.once("message", ready).once("error", fail).once("exit", exited);
    });
  }
}

/**
 * Runs one job to its last stage, or until the worker is lost. Each stage has `timeoutMs` of the worker's time: the
 * clock stops while the worker waits for the next chunk of a streamed message (the database's pace is not the
 * parser's). Rejects when the chunks cannot be read.
 */
function runJob(worker: Worker, feed: Feed, timeoutMs: number): Promise<{ outcome: JobOutcome; reusable: boolean; fed: number }> {
  return new Promise((resolve, reject) => {
    const outcome: { -readonly [K in keyof JobOutcome]: JobOutcome[K] } = {};
    let fed = 0;
    let timer: NodeJS.Timeout | undefined;
    let finished = false;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => lose(`parse time budget of ${timeoutMs} ms exceeded`), timeoutMs);
    };
    const finish = (reusable: boolean) => {
      finished = true;
      clearTimeout(timer);
      worker.off("message", onMessage).off("error", onError).off("exit", onExit);
      resolve({ outcome, reusable, fed });
    };
    const lose = (why: string) => {
      if (finished) return;
      outcome.lost = why;
      finish(false);
    };
    const feedNext = () => {
      clearTimeout(timer);
      feed.chunks!.next().then(
        ({ done, value }) => {
          if (finished) return;
          arm();
          if (done) return worker.postMessage({ kind: "end" } satisfies ToParseWorker);
          fed += value.byteLength;
          // A chunk that owns its memory whole is moved to the worker; a view of a larger buffer is copied.
          const owned = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength && value.buffer instanceof ArrayBuffer;
          worker.postMessage({ kind: "chunk", bytes: value } satisfies ToParseWorker, owned ? [value.buffer] : []);
        },
        (e: unknown) => {
          if (finished) return;
          finish(false);
          reject(e);
        },
      );
    };
    const onMessage = (reply: FromParseWorker) => {
      if (reply.kind === "more") return feedNext();
      arm();
      if (reply.kind === "parsed") outcome.parsed = reply.result;
      else if (reply.kind === "extracted") outcome.extracted = withTrimmedText(reply.result, reply.trimmedText, outcome.parsed);
      else outcome.text = reply.result;
      if (lastStage(feed.job, outcome)) finish(true);
    };
    // ERR_WORKER_OUT_OF_MEMORY arrives here when the heap limit is hit.
    const onError = (e: Error) => lose(`parser failed: ${e.message}`);
    const onExit = () => lose("parser exited");
    worker.on("message", onMessage).on("error", onError).on("exit", onExit);
    if (feed.job.kind === "message" && feed.job.raw) fed = feed.job.raw.byteLength;
    arm();
    worker.postMessage(feed.job);
  });
}

/** An extraction with the texts its worker left out put back: the parsed text, trimmed. */
function withTrimmedText(
  result: ParseWorkerResult<Extracted>,
  trimmed: TrimmedText | undefined,
  parsed: ParseWorkerResult<ParsedMessage> | undefined,
): ParseWorkerResult<Extracted> {
  if (!result.ok || trimmed === undefined) return result;
  // The worker answers the parse before extracting from it, so its text is here; were it not, the left-out texts
  // could not be put back, and an extraction with empty texts must not pass for the real one.
  if (parsed?.ok !== true) return { ok: false, error: "extraction answered without its parsed text" };
  const text = parsed.value.text.trim();
  const { replyText, safeText } = result.value;
  return { ok: true, value: { ...result.value, replyText: trimmed.replyText ? text : replyText, safeText: trimmed.safeText ? text : safeText } };
}

/** Whether the job has answered its last stage. */
function lastStage(job: ToParseWorker, outcome: JobOutcome): boolean {
  if (job.kind === "html-to-text" || outcome.text) return true;
  if (outcome.parsed?.ok === false) return true;
  return outcome.extracted !== undefined && outcome.parsed?.ok === true && !needsText(outcome.parsed.value);
}

/** An HTML-only message gets text made from its HTML. */
function needsText(email: ParsedMessage): boolean {
  return email.html !== null && !email.text.trim();
}

/**
 * The message from its header section alone, after the whole could not be parsed. The header section is bounded by
 * the SMTP limit, so it parses cheaply even when the body cannot; it gets a budget of its own that a busy machine
 * cannot exhaust, so a cut-off message still keeps its headers.
 */
async function headersOnly(
  workers: ParseWorkers,
  options: EmailParserOptions,
  raw: RawInput,
  authentication: SenderAuthentication | null,
  why: string,
): Promise<{ parsed: ParsedMessage; extracted?: ParseWorkerResult<Extracted> | undefined }> {
  const section = await headerSection(raw, options.maxHeaderBytes);
  const headers = await workers.run(section, authentication, Math.max(options.timeoutMs, HEADER_PARSE_BUDGET_MS));
  if (headers.parsed?.ok) return { parsed: { ...headers.parsed.value, problem: why }, extracted: headers.extracted };
  return { parsed: { ...EMPTY_EMAIL, problem: `${why}; headers: ${headers.parsed?.ok === false ? headers.parsed.error : headers.lost}` } };
}

/** The message with the text made from its HTML when it has HTML only (made again if its worker was lost before). */
async function withText(workers: ParseWorkers, email: ParsedMessage, job: JobOutcome): Promise<ParsedMessage> {
  if (!needsText(email)) return email;
  let derived = job.text;
  if (!derived) {
    // The worker was lost before this stage (extraction blew the budget): a worker of its own makes the text.
    const again = await workers.run({ html: email.html! });
    derived = again.text ?? { ok: false, error: again.lost! };
  }
  const problem = derived.ok ? derived.value.problem : `text from HTML: ${derived.error}`;
  return {
    ...email,
    text: derived.ok ? derived.value.text : "",
    problem: [email.problem, problem].filter((p) => p !== null).join("; ") || null,
  };
}

export const EMPTY_EMAIL: ParsedMessage = {
  messageId: null,
  inReplyTo: null,
  references: [],
  subject: "",
  from: null,
  to: [],
  cc: [],
  replyTo: null,
  text: "",
  html: null,
  attachments: [],
  problem: null,
};

/** The header section of a raw message (at most maxBytes, up to its blank line), as a message of its own. */
async function headerSection(raw: RawInput, maxBytes: number): Promise<Uint8Array> {
  const head = raw instanceof Uint8Array ? raw.subarray(0, maxBytes) : await firstBytes(raw, maxBytes);
  return Buffer.concat([head.subarray(0, headerEnd(head, maxBytes)), Buffer.from("\r\n")]);
}

/** The first `n` bytes of a streamed message (fewer when it is shorter). */
async function firstBytes(raw: RawChunks, n: number): Promise<Uint8Array> {
  const pieces: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of raw.chunks()) {
    pieces.push(chunk.subarray(0, n - length));
    length += pieces.at(-1)!.byteLength;
    if (length >= n) break;
  }
  return Buffer.concat(pieces);
}
