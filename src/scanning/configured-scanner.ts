// The scanner of a configuration: the engine (clamd or the built-in one) behind the limits every engine obeys.
import { createBuiltinScanner } from "./builtin.js";
import { createClamdScanner, parseClamdAddress } from "./clamd.js";
import type { Scanner, ScanningOptions, ScanVerdict } from "./scanner.js";

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
