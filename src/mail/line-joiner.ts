// Long base64 bodies fed to mailparser as long lines. Its MIME splitter (mailsplit) handles every line on a turn of
// the event loop of its own, so a 9 MB attachment in 76-character lines costs ~120,000 turns (about two thirds of
// the parse); the same data in long lines costs a few hundred. Before the splitter reads a chunk, the line breaks
// inside the base64 body it is reading are removed, and nothing else is touched, so every decoded byte stays the same:
// - Only while the splitter is in the body of a base64 leaf part (its own state, read as the chunk arrives), and only
//   lines it cannot take for a boundary (a boundary has two dashes after at most two CR or LF bytes), so no line
//   changes the part: the joined lines are the second one of the chunk onwards (the first continues what the splitter
//   carried over) up to the first line with a dash among its first three bytes; the last of them keeps its break.
// - The base64 decoder drops every byte outside the base64 alphabet, CR and LF among them, and it receives the same
//   pieces as before (the splitter passes a part's body on once per chunk, however many lines it holds, and the
//   chunks are the same): malformed base64, whose decoding depends on where the pieces are cut, decodes as it did.
// test/unit/line-joiner.test.ts holds this against plain mailparser over generated messages and chunkings.
// Plain erasable TypeScript: the parser worker loads it without tsx.

/** mailsplit's state while it reads a part's body (message-splitter.js: `const BODY = 0x02`). */
const SPLITTER_BODY = 0x02;
const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;
const EMPTY = Buffer.alloc(0);

/** What is read of mailsplit's MessageSplitter (a Transform); checked before anything is changed. */
interface Splitter {
  state: number;
  line: Buffer | false;
  hasFailed: boolean;
  node: { multipart: unknown; encoding: unknown } | undefined;
  _transform(chunk: Buffer, encoding: BufferEncoding, callback: (error?: Error | null) => void): void;
}

/**
 * Makes the splitter of a MailParser read base64 bodies as long lines. A parser of another shape (a mailparser
 * that no longer has the splitter this reads) is left as it is.
 */
export function joinBase64Lines(parser: object): void {
  const splitter = (parser as { splitter?: Partial<Splitter> }).splitter;
  if (!isSplitter(splitter)) return;
  const transform = splitter._transform;
  splitter._transform = (chunk, encoding, callback) => {
    const node = splitter.node;
    const inBase64Body = !splitter.hasFailed && splitter.state === SPLITTER_BODY && node && !node.multipart && node.encoding === "base64";
    transform.call(splitter, inBase64Body && Buffer.isBuffer(chunk) ? joinedLines(chunk, splitter.line) : chunk, encoding, callback);
  };
}

function isSplitter(value: Partial<Splitter> | undefined): value is Splitter {
  return (
    value !== undefined &&
    typeof value._transform === "function" &&
    typeof value.state === "number" &&
    "line" in value &&
    "node" in value &&
    typeof value.hasFailed === "boolean"
  );
}

/**
 * The chunk with the line breaks between its body lines removed (see the top of the file); the chunk itself when
 * there are none to remove. `carried`: the start of the chunk's first line, which the splitter kept from the last.
 */
export function joinedLines(chunk: Buffer, carried: Buffer | false): Buffer {
  const firstBreak = chunk.indexOf(LF);
  if (firstBreak < 0 || mayBeBoundary(carried || EMPTY, chunk, 0)) return chunk;
  // Compacted in place, line by line: native searches and moves, no strings and no copy (this runs over every byte
  // of a body). The chunk is the splitter's own: mailparser's passthrough in front of it joins what is written into
  // buffers of its own (test/unit/line-joiner.test.ts checks that what was written stays untouched).
  const out = chunk;
  let to = firstBreak + 1;
  let from = firstBreak + 1;
  let lastBreak = 0;
  for (let lf = chunk.indexOf(LF, from); lf >= 0 && !mayBeBoundary(EMPTY, chunk, from); lf = chunk.indexOf(LF, from)) {
    const end = lf > from && chunk[lf - 1] === CR ? lf - 1 : lf;
    out.copyWithin(to, from, end);
    to += end - from;
    lastBreak = lf + 1 - end;
    from = lf + 1;
  }
  if (lastBreak === 0) return chunk;
  if (lastBreak === 2) out[to++] = CR;
  out[to++] = LF;
  out.copyWithin(to, from);
  return out.subarray(0, to + chunk.length - from);
}

/**
 * Whether the line that starts at `at` (after what was carried over, for the chunk's first line) may be a boundary.
 * The splitter carries the line break of the last line it read over with what follows it, and looks for the two
 * dashes of a boundary after at most two leading CR or LF bytes: a line with no dash among its first three bytes
 * is no boundary.
 */
function mayBeBoundary(carried: Buffer, chunk: Buffer, at: number): boolean {
  for (let i = 0; i < 3; i++) {
    const byte = i < carried.length ? carried[i] : chunk[at + i - carried.length];
    if (byte === DASH) return true;
    if (byte === LF && i >= carried.length) return false;
  }
  return false;
}
