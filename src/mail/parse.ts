// The mail parser adapter: our own ParsedEmail type, produced by mailparser (in maintenance mode upstream, so it
// stays behind this file). Parsing untrusted MIME can take unbounded time and memory, so it runs in worker
// threads with a heap limit and a deadline: a job that blows the budget costs only its worker, the rest of the
// process (the SMTP listener above all) stays responsive, and the message is still stored from what did parse.
// Extraction (reply text, codes, links: src/extraction) runs in the same workers right after, as a job of its own,
// so hostile HTML that makes it slow or large costs the extraction only, never the parsed message.
import { Worker } from "node:worker_threads";
import type { Extracted, ExtractionInput, SenderAuthentication } from "../extraction/index.js";
import { siblingModule } from "../runtime/sibling-module.js";

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

export interface ParseOptions {
  /**
   * What sender authentication found, computed while the message parses (null: not evaluated); extraction waits for
   * it, since the safety analysis reads it. It must resolve (its own budget bounds it) and never reject.
   */
  readonly authentication?: Promise<SenderAuthentication | null>;
}

export interface EmailParser {
  /**
   * A parse that fails or exceeds its budget yields what did parse (at least the headers), with `problem` set; an
   * extraction that does yields `extracted` null. Rejects only when no parse can run at all (a worker cannot start,
   * the parser is closed).
   */
  parse(raw: Uint8Array, options?: ParseOptions): Promise<ParsedEmail>;
  close(): Promise<void>;
}

/** Settings of one worker (its workerData). */
export interface ParseWorkerSettings {
  readonly maxHeaderBytes: number;
  readonly maxMimeParts: number;
}

/**
 * A worker job: a whole message (its text from text parts only), or text made from HTML, the costly part, done
 * apart so that blowing the budget on it keeps the rest of the message.
 */
export type ParseWorkerJob =
  | { readonly kind: "message"; readonly raw: Uint8Array }
  | { readonly kind: "html-to-text"; readonly html: string }
  | { readonly kind: "extract"; readonly input: ExtractionInput };

export interface DerivedText {
  readonly text: string;
  readonly problem: string | null;
}

export type ParseWorkerResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

type Outcome<T> = ParseWorkerResult<T> & { readonly reusable: boolean };

/** Time allowed to parse the bounded header section after the whole message overran its budget. */
const HEADER_PARSE_BUDGET_MS = 2_000;

const WORKER_URL = siblingModule("./parse-worker", import.meta.url);

export function createEmailParser(options: EmailParserOptions): EmailParser {
  const workers = new ParseWorkers(options);
  return {
    async parse(raw, parseOptions = {}) {
      const parsed = await parseMessage(workers, options, raw);
      // Text parts are the sender's words; text made from HTML-only mail is not (extraction reads the HTML then).
      const textFromParts = parsed.text.trim() !== "";
      const email = await withText(workers, options, raw, parsed);
      const authentication = (await parseOptions.authentication) ?? null;
      return { ...email, extracted: await extract(workers, email, textFromParts, authentication) };
    },
    close: () => workers.close(),
  };
}

/** The worker threads: as many jobs at once as workers, each worker reused until a job blows its budget. */
class ParseWorkers {
  private readonly idle: Worker[] = [];
  private free: number;
  private readonly queue: (() => void)[] = [];
  private closed = false;

  constructor(private readonly options: EmailParserOptions) {
    this.free = options.workers;
  }

  /** Runs one job on a worker within its time budget (the parser's unless given). */
  async attempt<T>(job: ParseWorkerJob, timeoutMs = this.options.timeoutMs): Promise<ParseWorkerResult<T>> {
    await this.slot();
    try {
      const worker = this.idle.pop() ?? (await this.spawn());
      const outcome = await run<T>(worker, job, timeoutMs);
      if (outcome.reusable && !this.closed) this.idle.push(worker);
      else void worker.terminate();
      return outcome;
    } finally {
      this.freeSlot();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.queue.splice(0)) wake();
    await Promise.all(this.idle.splice(0).map((w) => w.terminate()));
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
      workerData: { maxHeaderBytes, maxMimeParts } satisfies ParseWorkerSettings,
      resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: Math.min(64, Math.ceil(memoryMb / 4)) },
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

function run<T>(worker: Worker, job: ParseWorkerJob, timeoutMs: number): Promise<Outcome<T>> {
  return new Promise((resolve) => {
    const finish = (outcome: Outcome<T>) => {
      clearTimeout(timer);
      worker.off("message", onMessage).off("error", onError).off("exit", onExit);
      resolve(outcome);
    };
    const onMessage = (reply: ParseWorkerResult<T>) => finish({ ...reply, reusable: true });
    // ERR_WORKER_OUT_OF_MEMORY arrives here when the heap limit is hit.
    const onError = (e: Error) => finish({ ok: false, error: `parser failed: ${e.message}`, reusable: false });
    const onExit = () => finish({ ok: false, error: "parser exited", reusable: false });
    const timer = setTimeout(() => finish({ ok: false, error: `parse time budget of ${timeoutMs} ms exceeded`, reusable: false }), timeoutMs);
    worker.on("message", onMessage).on("error", onError).on("exit", onExit);
    worker.postMessage(job);
  });
}

async function parseMessage(workers: ParseWorkers, options: EmailParserOptions, raw: Uint8Array): Promise<ParsedMessage> {
  const full = await workers.attempt<ParsedMessage>({ kind: "message", raw });
  if (full.ok) return full.value;
  // The header section is bounded by the SMTP limit, so it parses cheaply even when the body cannot; it gets a
  // budget of its own that a busy machine cannot exhaust, so a cut-off message still keeps its headers.
  const headers = await workers.attempt<ParsedMessage>(
    { kind: "message", raw: headerSection(raw, options.maxHeaderBytes) },
    Math.max(options.timeoutMs, HEADER_PARSE_BUDGET_MS),
  );
  if (headers.ok) return { ...headers.value, problem: full.error };
  return { ...EMPTY_EMAIL, problem: `${full.error}; headers: ${headers.error}` };
}

/**
 * What extraction reads out of the message. It gets the text only when it came from text parts: text made from
 * the HTML would lose what the HTML says (what is hidden, quoted or prominent), so it reads the HTML then.
 */
async function extract(
  workers: ParseWorkers,
  email: ParsedMessage,
  textFromParts: boolean,
  authentication: SenderAuthentication | null,
): Promise<Extracted | null> {
  const input: ExtractionInput = {
    text: textFromParts ? email.text : null,
    html: email.html,
    subject: email.subject,
    from: email.from?.email ?? null,
    replyTo: email.replyTo?.email ?? null,
    authentication,
  };
  const extracted = await workers.attempt<Extracted>({ kind: "extract", input });
  return extracted.ok ? extracted.value : null;
}

/** The message with text for an HTML-only one made from its HTML (a job of its own: the costly part). */
async function withText(workers: ParseWorkers, options: EmailParserOptions, raw: Uint8Array, email: ParsedMessage): Promise<ParsedMessage> {
  if (email.html === null || email.text.trim()) {
    return lostBody(raw, email, options.maxHeaderBytes) ? { ...email, problem: "no readable body part" } : email;
  }
  const derived = await workers.attempt<DerivedText>({ kind: "html-to-text", html: email.html });
  const problem = derived.ok ? derived.value.problem : `text from HTML: ${derived.error}`;
  return {
    ...email,
    text: derived.ok ? derived.value.text : "",
    problem: [email.problem, problem].filter((p) => p !== null).join("; ") || null,
  };
}

const EMPTY_EMAIL: ParsedMessage = {
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

/**
 * Whether a body with content yielded nothing (a multipart without a boundary, say): the message is then partial,
 * and its raw form must be kept.
 */
function lostBody(raw: Uint8Array, email: ParsedMessage, maxHeaderBytes: number): boolean {
  if (email.problem !== null || email.text.trim() || email.html !== null || email.attachments.length > 0) return false;
  const headerBytes = headerSection(raw, maxHeaderBytes).byteLength - 2;
  return /\S/.test(Buffer.from(raw.buffer, raw.byteOffset + headerBytes, raw.byteLength - headerBytes).toString("latin1"));
}

/** The header section of a raw message (up to the blank line, at most maxBytes), as a message of its own. */
function headerSection(raw: Uint8Array, maxBytes: number): Uint8Array {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.byteLength, maxBytes));
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  const ends = [crlf === -1 ? -1 : crlf + 2, lf === -1 ? -1 : lf + 1].filter((i) => i >= 0);
  const end = ends.length > 0 ? Math.min(...ends) : buf.length;
  return Buffer.concat([buf.subarray(0, end), Buffer.from("\r\n")]);
}
