// A message as the authentication reads it: all its bytes at once, or a stream of chunks (a large message is
// stored in chunks and never held whole). Only the header section is held, and only up to a bound; the body
// passes through in chunks of at most 64 KiB, its line endings made CRLF on the way (as the DKIM verifier would
// make them, but in one pass instead of one write per bare LF) and each line's length watched.
import { Buffer } from "node:buffer";
import { setImmediate as turn } from "node:timers/promises";

export type MessageSource = Uint8Array | AsyncIterable<Uint8Array>;

export interface SplitMessage {
  /** The header section up to and including the empty line that ends it (all of a message without a body). */
  readonly header: Buffer;
  /** What follows the header section. */
  readonly body: Uint8Array | AsyncIterable<Uint8Array>;
  /** Lets go of a stream's source (a database cursor) whether or not the body was read; safe to call again. */
  release(): Promise<void>;
}

const NOTHING_TO_RELEASE = async () => undefined;

/** What the DKIM verifier is given per write; as mailauth's own writer, so that a buffer costs the same either way. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Separates the header section from the body, reading no more than `maxHeaderBytes` (and the rest of the chunk
 * that crosses it) of a stream. Undefined when no header section ends within the bound; the stream is then
 * released unread.
 */
export async function splitHeaderSection(source: MessageSource, maxHeaderBytes: number): Promise<SplitMessage | undefined> {
  if (source instanceof Uint8Array) {
    const bytes = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
    const end = headerEnd(bytes.subarray(0, maxHeaderBytes + 3), true);
    if (end < 0) return bytes.length <= maxHeaderBytes ? { header: bytes, body: new Uint8Array(0), release: NOTHING_TO_RELEASE } : undefined;
    return { header: bytes.subarray(0, end), body: bytes.subarray(end), release: NOTHING_TO_RELEASE };
  }
  const iterator = source[Symbol.asyncIterator]();
  const release = async () => {
    await iterator.return?.();
  };
  // The chunks read so far, joined once: a stream of small chunks would otherwise be copied over and over.
  const parts: Buffer[] = [];
  let length = 0;
  /** The last two bytes read: the empty line may begin there and end in the next chunk. */
  let tail: Buffer = Buffer.alloc(0);
  for (;;) {
    const next = await iterator.next();
    if (next.done) {
      if (length > maxHeaderBytes) return undefined;
      return { header: Buffer.concat(parts, length), body: new Uint8Array(0), release };
    }
    const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    const window = tail.length === 0 ? chunk : Buffer.concat([tail, chunk]);
    const found = headerEnd(window, length - tail.length === 0);
    const windowStart = length - tail.length;
    parts.push(chunk);
    length += chunk.length;
    tail = chunk.length >= 2 ? chunk.subarray(-2) : window.subarray(-2);
    if (found >= 0) {
      const end = windowStart + found;
      if (end > maxHeaderBytes + 3) break;
      const held = Buffer.concat(parts, length);
      return { header: held.subarray(0, end), body: continued(held.subarray(end), iterator), release };
    }
    if (length > maxHeaderBytes + 3) break;
  }
  await release();
  return undefined;
}

/**
 * The offset just past the empty line that ends the header section (CRLF or a bare LF, as RFC 5322 §2.1 read by
 * mail software), or -1. `atStart`: the bytes begin the message, where an empty first line means an empty header
 * section.
 */
function headerEnd(bytes: Buffer, atStart: boolean): number {
  if (atStart) {
    if (bytes[0] === 0x0a) return 1;
    if (bytes[0] === 0x0d && bytes[1] === 0x0a) return 2;
  }
  for (let lf = bytes.indexOf(0x0a); lf >= 0; lf = bytes.indexOf(0x0a, lf + 1)) {
    if (bytes[lf + 1] === 0x0a) return lf + 2;
    if (bytes[lf + 1] === 0x0d && bytes[lf + 2] === 0x0a) return lf + 3;
  }
  return -1;
}

async function* continued(first: Buffer, iterator: AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    if (first.length > 0) yield first;
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // Given up early (the budget ran out): the source's own cleanup runs (a database cursor, a file).
    await iterator.return?.();
  }
}

export class LineTooLong extends Error {}

/** A body up to this size is checked and handed over in one piece: a stream of chunks costs more than it saves. */
const WHOLE_BODY_BYTES = 256 * 1024;

/**
 * The header and the body as the DKIM verifier takes them: every bare LF made CRLF, a small body in one piece, a
 * larger one in chunks of at most CHUNK_BYTES. Throws LineTooLong (at once, or while the chunks are read) when a
 * body line runs past `maxLineBytes`: mailauth's relaxed body hash copies the unfinished line again for every chunk,
 * so one line of megabytes costs seconds (RFC 5322 §2.1.1 allows 998).
 */
export function verifierInput(message: SplitMessage, maxLineBytes: number): Iterable<Buffer> | AsyncIterable<Buffer> {
  const lines = new CrlfLines();
  const header = lines.normalize(message.header);
  // Header lines are bounded by the header section's own bound.
  lines.longest = 0;
  if (message.body instanceof Uint8Array && message.body.length <= WHOLE_BODY_BYTES) {
    const body = lines.normalize(message.body);
    if (lines.longest > maxLineBytes) throw new LineTooLong(`a body line is longer than ${maxLineBytes} bytes`);
    return [header, body];
  }
  return inChunks(header, message.body, lines, maxLineBytes);
}

async function* inChunks(header: Buffer, body: Uint8Array | AsyncIterable<Uint8Array>, lines: CrlfLines, maxLineBytes: number): AsyncGenerator<Buffer> {
  yield header;
  for await (const chunk of chunks(body)) {
    const out = lines.normalize(chunk);
    if (lines.longest > maxLineBytes) throw new LineTooLong(`a body line is longer than ${maxLineBytes} bytes`);
    yield out;
    // A stream that is always ready would keep the verifier in promise jobs and next-tick callbacks, where no timer
    // (the budget) and no other connection gets a turn; mailauth's own writer yields the same way per chunk.
    await turn();
  }
}

/** The body in chunks of CHUNK_BYTES: small ones (a stream of single bytes) joined, large ones cut. */
async function* chunks(body: Uint8Array | AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (body instanceof Uint8Array) {
    for (let at = 0; at < body.length; at += CHUNK_BYTES) yield body.subarray(at, at + CHUNK_BYTES);
    return;
  }
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  for await (const chunk of body) {
    for (let at = 0; at < chunk.length; ) {
      const piece = chunk.subarray(at, at + CHUNK_BYTES - heldBytes);
      at += piece.length;
      held.push(piece);
      heldBytes += piece.length;
      if (heldBytes === CHUNK_BYTES) {
        yield held.length === 1 ? held[0]! : Buffer.concat(held);
        held = [];
        heldBytes = 0;
      }
    }
  }
  if (heldBytes > 0) yield Buffer.concat(held);
}

/**
 * Bare LF → CRLF across chunk boundaries (a CR that ends one chunk pairs with an LF that starts the next), and the
 * longest line seen so far, a line that spans chunks counted whole.
 */
class CrlfLines {
  /** The longest line so far, in bytes before normalization, its line break left out. */
  longest = 0;
  private previousByte = -1;
  /** Bytes of the line still open at the end of the previous chunk. */
  private openLine = 0;

  normalize(chunk: Uint8Array): Buffer {
    const input = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const before = this.previousByte;
    // Byte loops: a native indexOf per line costs more than reading the bytes when lines are short.
    let bare = 0;
    let previous = before;
    let line = this.openLine;
    let longest = this.longest;
    for (let i = 0; i < input.length; i++) {
      const byte = input[i]!;
      if (byte === 0x0a) {
        if (previous !== 0x0d) bare++;
        if (line > longest) longest = line;
        line = 0;
      } else {
        line++;
      }
      previous = byte;
    }
    this.previousByte = previous;
    this.openLine = line;
    this.longest = Math.max(longest, line);
    if (bare === 0) return input;
    const out = Buffer.allocUnsafe(input.length + bare);
    let to = 0;
    previous = before;
    for (let i = 0; i < input.length; i++) {
      const byte = input[i]!;
      if (byte === 0x0a && previous !== 0x0d) out[to++] = 0x0d;
      out[to++] = byte;
      previous = byte;
    }
    return out;
  }
}
