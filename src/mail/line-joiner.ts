// Long base64 bodies fed to mailparser as long lines. Its MIME splitter (mailsplit) handles every line on a turn of
// the event loop of its own, so a 9 MB attachment in 76-character lines costs ~120,000 turns (about two thirds of
// the parse); the same data in long lines costs a few hundred. Before the splitter reads a chunk, the line breaks
// inside the base64 body it is reading are removed, and nothing else is touched, so every decoded byte stays the same:
// - Only while the splitter is in the body of a base64 leaf part (its own state, read as the chunk arrives), and only
//   lines it cannot take for a boundary, so no line changes the part: the joined lines are the second one of the
//   chunk onwards (the first continues what the splitter carried over) up to the first line that is not all base64
//   letters; the last of them keeps its line break.
// - The base64 decoder drops CR and LF itself, and it receives the same pieces as before (the splitter passes a
//   part's body on once per chunk, however many lines it holds, and the chunks are the same): malformed base64,
//   whose decoding depends on where the pieces are cut, decodes as it did.
// test/unit/line-joiner.test.ts holds this against plain mailparser over generated messages and chunkings.
// Plain erasable TypeScript: the parser worker loads it without tsx.

/** mailsplit's state while it reads a part's body (message-splitter.js: `const BODY = 0x02`). */
const SPLITTER_BODY = 0x02;
const LF = 0x0a;
const DASH = 0x2d;
const EMPTY = Buffer.alloc(0);

/** The lines of base64 letters that follow a line: one or more, each ended by CRLF or LF. */
const BASE64_LINES = /(?:[A-Za-z0-9+/=]+\r?\n)+/y;
const LINE_BREAKS = /\r?\n/g;

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
 * The chunk with the line breaks between its base64 lines removed (see the top of the file); the chunk itself when
 * there are none to remove. `carried`: the start of the chunk's first line, which the splitter kept from the last.
 */
export function joinedLines(chunk: Buffer, carried: Buffer | false): Buffer {
  const firstBreak = chunk.indexOf(LF);
  if (firstBreak < 0) return chunk;
  if (mayBeBoundary(carried || EMPTY, chunk)) return chunk;
  const text = chunk.toString("latin1");
  BASE64_LINES.lastIndex = firstBreak + 1;
  const run = BASE64_LINES.exec(text);
  if (!run) return chunk;
  const start = run.index;
  const end = start + run[0].length;
  const lastBreak = text[end - 2] === "\r" ? "\r\n" : "\n";
  const joined = run[0].slice(0, -lastBreak.length).replace(LINE_BREAKS, "") + lastBreak;
  if (joined.length === run[0].length) return chunk;
  const out = Buffer.allocUnsafe(chunk.length - (run[0].length - joined.length));
  chunk.copy(out, 0, 0, start);
  out.write(joined, start, "latin1");
  chunk.copy(out, start + joined.length, end);
  return out;
}

/**
 * Whether the chunk's first line (what was carried over, then the chunk up to its first LF) may be a boundary.
 * The splitter carries the line break of the last line it read over with what follows it, and looks for the two
 * dashes of a boundary after at most two leading CR or LF bytes: a line with no dash among its first three bytes
 * is no boundary.
 */
function mayBeBoundary(carried: Buffer, chunk: Buffer): boolean {
  for (let i = 0; i < 3; i++) {
    const byte = i < carried.length ? carried[i] : chunk[i - carried.length];
    if (byte === DASH) return true;
    if (byte === LF && i >= carried.length) return false;
  }
  return false;
}
