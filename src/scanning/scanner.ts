// The scanner port: what the attachment scan needs from an anti-malware engine, its verdicts, and the scan states
// of attachments and messages. A verdict is never clean unless the engine saw all of the content and said so
// (configured-scanner.ts puts every engine under the same limits).

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
