// Outbound attachments through the attachment scanner before anything is kept or sent: the files of a send (inline,
// uploaded or fetched from a URL) and every upload. Unlike an inbound attachment, whose verdict may come later (the
// message is already the service's to keep), an outbound one must be judged before the 202: an infected file is
// refused, and a scanner that gives no verdict refuses the request for now (503, retried by the caller) rather than
// let unscanned bytes out. The scanner is the inbound one (createScanner(config.scanning)): clamd or the built-in.
import { TooLarge, Unavailable, Unprocessable } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Scanner } from "../scanning/scanner.js";

export interface OutboundScanning {
  readonly scanner: Scanner;
  /** SCAN_MAX_BYTES: larger content gets no verdict, so it can never be sent. */
  readonly maxBytes: number;
  readonly log: Logger;
}

export interface ScannedFile {
  /** How the request names it, for the refusal: attachments[2] (invoice.pdf). */
  readonly label: string;
  readonly filename: string;
  readonly contentType: string;
  readonly content: Uint8Array;
}

/** How long a caller waits before retrying a request the scanner could not judge (clamd restarting, overloaded). */
export const SCAN_RETRY_AFTER_S = 30;

/**
 * Scans every file; resolves when each is clean. Throws 413 attachment_too_large for a file over the
 * scanner's limit (before any scan), 422 attachment_infected naming each infected file and its finding, else 503
 * scan_unavailable with Retry-After when any got no verdict (its reason is logged, not told: it names the scanner).
 */
export async function requireCleanFiles(scanning: OutboundScanning, files: readonly ScannedFile[]): Promise<void> {
  const oversized = files.filter((f) => f.content.byteLength > scanning.maxBytes);
  if (oversized.length > 0) {
    throw new TooLarge(
      "attachment_too_large",
      `${oversized.map((f) => `${f.label}: ${f.content.byteLength} bytes`).join("; ")}: larger than the attachment scanner takes (${scanning.maxBytes} bytes)`,
    );
  }
  // One at a time: a send's files together are at most a message's size, and a hundred of them at once would take
  // a hundred of clamd's threads (MaxThreads, 10 by default) from inbound scans.
  const verdicts = [];
  for (const f of files) verdicts.push(await scanning.scanner.scan(f.content, { filename: f.filename, contentType: f.contentType }));
  const infected = verdicts.flatMap((v, i) => (v.state === "infected" ? [`${files[i]!.label}: ${v.finding}`] : []));
  if (infected.length > 0) {
    throw new Unprocessable("attachment_infected", `the attachment scanner found malware, so nothing was stored or sent: ${infected.join("; ")}`);
  }
  const unjudged = verdicts.flatMap((v, i) => (v.state === "error" ? [{ label: files[i]!.label, reason: v.reason }] : []));
  if (unjudged.length > 0) {
    scanning.log.warn("outbound attachment scan failed", { files: unjudged });
    throw new Unavailable(
      "scan_unavailable",
      `the attachment scanner could not judge ${unjudged.map((u) => u.label).join(", ")}; nothing was stored or sent: retry shortly`,
      SCAN_RETRY_AFTER_S,
    );
  }
}
