// Where a raw message's header section ends, and whether a body holds anything: read by the parser's adapter (the
// header section of a message whose parse failed) and its worker threads (a body with content that parsed into
// nothing). Plain erasable TypeScript: the worker loads it without tsx.

const CR = 0x0d;
const LF = 0x0a;

/**
 * Where the header lines among the first `maxBytes` of a message end: after the line break that the blank line
 * follows (a CRLF CRLF or LF LF, whichever comes first); `maxBytes` (or the whole) when no blank line is there.
 */
export function headerEnd(raw: Uint8Array, maxBytes: number): number {
  const length = Math.min(raw.byteLength, maxBytes);
  for (let i = 0; i < length - 1; i++) {
    if (raw[i] !== LF) continue;
    if (raw[i + 1] === LF) return i + 1;
    if (i > 0 && raw[i - 1] === CR && raw[i + 1] === CR && i + 2 < length && raw[i + 2] === LF) return i + 1;
  }
  return length;
}

/** Whether the bytes hold anything but white space (as a Latin-1 `\s` sees it). */
export function hasContent(bytes: Uint8Array): boolean {
  for (const b of bytes) {
    if (b !== 0x20 && b !== 0xa0 && (b < 0x09 || b > 0x0d)) return true;
  }
  return false;
}
