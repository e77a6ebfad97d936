// The scanner port: what the attachment scan needs from an anti-malware engine, and the rules every engine obeys
// (a verdict is never clean unless the engine saw all of the content and said so).
import { createBuiltinScanner } from "./builtin.js";
import { createClamdScanner, parseClamdAddress } from "./clamd.js";

/** The scan state of an attachment. unscanned until a verdict is stored; only clean attachments download. */
export type ScanState = "unscanned" | "clean" | "infected" | "error";

export type ScanVerdict =
  | { readonly state: "clean" }
  | { readonly state: "infected"; readonly finding: string }
  | { readonly state: "error"; readonly reason: string };

/** What the sender declared about an attachment: untrusted, used only to flag dangerous types. */
export interface ScanMeta {
  readonly filename: string;
  readonly contentType: string;
}

export interface Scanner {
  /** Resolves to a verdict; a failure to scan is an error verdict, so implementations never reject. */
  scan(content: Uint8Array, meta: ScanMeta): Promise<ScanVerdict>;
}

export interface ScanningOptions {
  /** `host:port` or `unix:/path` of a clamd; undefined uses the built-in scanner. */
  readonly clamdAddress: string | undefined;
  /** Longest a single scan may take, the clamd connection included. */
  readonly timeoutMs: number;
  /** Larger attachments are not scanned (an error verdict), never passed as clean. */
  readonly maxBytes: number;
}

/** Worst first: one infected attachment makes the message infected, one unscanned keeps it from being clean. */
const SEVERITY: Readonly<Record<ScanState, number>> = { infected: 3, error: 2, unscanned: 1, clean: 0 };

/** The state of a message's attachments taken together: the worst of them (infected > error > unscanned > clean). */
export function worstScanState(states: Iterable<ScanState>): ScanState {
  let worst: ScanState = "clean";
  for (const state of states) if (SEVERITY[state] > SEVERITY[worst]) worst = state;
  return worst;
}

export function isScanState(value: string): value is ScanState {
  return Object.hasOwn(SEVERITY, value);
}

/**
 * clamd when an address is configured (production), else the built-in scanner; both under the same limits. The
 * built-in scanner works synchronously, so its own archive limits rather than the timeout bound its time.
 */
export function createScanner(options: ScanningOptions): Scanner {
  const engine = options.clamdAddress
    ? createClamdScanner({ address: parseClamdAddress(options.clamdAddress), timeoutMs: options.timeoutMs })
    : createBuiltinScanner();
  return withLimits(engine, options);
}

/** Refuses oversized content and bounds the time of any engine; a thrown error becomes an error verdict. */
export function withLimits(engine: Scanner, limits: { readonly timeoutMs: number; readonly maxBytes: number }): Scanner {
  return {
    async scan(content, meta) {
      if (content.byteLength > limits.maxBytes) {
        return { state: "error", reason: `${content.byteLength} bytes exceed the scan limit of ${limits.maxBytes}` };
      }
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<ScanVerdict>((resolve) => {
        timer = setTimeout(() => resolve({ state: "error", reason: `scan took longer than ${limits.timeoutMs} ms` }), limits.timeoutMs);
      });
      try {
        return await Promise.race([
          engine.scan(content, meta).catch((e: unknown): ScanVerdict => ({ state: "error", reason: `scanner failed: ${errorText(e)}` })),
          timeout,
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
