// The structural limits of a message checked while its bytes stream in during DATA, so a refusal is a proper SMTP
// reply instead of a parser failure later: header size, MIME nesting depth and MIME part count. Memory and work
// per byte are bounded: only header blocks (up to the limit) and lines short enough to be a boundary are kept.
//
// Boundaries are matched the way the parser (mailsplit) matches them: a line is compared with the innermost open
// multipart's boundary and with its parent's only, so this follows the same tree the parser will build.

export interface MessageLimits {
  readonly maxHeaderBytes: number;
  readonly maxMimeDepth: number;
  readonly maxMimeParts: number;
}

export type LimitViolation = "header_too_large" | "mime_too_deep" | "too_many_parts";

const LF = 0x0a;
const DASH = 0x2d;
const LF_DASH = Buffer.from("\n-");
/** Room around a boundary on its line: the leading "--", a closing "--", CR and trailing white space. */
const BOUNDARY_SLACK = 8;

export class MessageStructureCheck {
  private violation: LimitViolation | null = null;
  /** Boundaries of the open multipart parts, outermost first. */
  private readonly open: string[] = [];
  private parts = 1;
  private inHeaders = true;
  private headerBytes = 0;
  private headerText = "";
  /** The start of the current line (as much of it as may matter) and its full length so far. */
  private line: Buffer[] = [];
  private kept = 0;
  private lineLength = 0;

  constructor(private readonly limits: MessageLimits) {}

  write(chunk: Buffer): void {
    let start = 0;
    while (this.violation === null && start < chunk.length) {
      // Past the headers of a part that is not multipart, and outside every multipart, no line can matter any more.
      if (!this.inHeaders && this.open.length === 0) return;
      if (this.lineLength === 0 && !this.inHeaders && chunk[start] !== DASH) {
        start = this.skipBodyLines(chunk, start);
        continue;
      }
      const end = chunk.indexOf(LF, start);
      const stop = end === -1 ? chunk.length : end + 1;
      this.keep(chunk.subarray(start, stop));
      if (end === -1) return;
      this.endLine();
      start = stop;
    }
  }

  /**
   * From the start of a body line that cannot be a boundary (it does not start with "-"), on to the start of the next
   * one that may: found with one search instead of a step per line, as most of a large message's lines are such
   * (base64 lines of 76 characters). Returns the chunk's length when there is none in it; a last line cut off by the
   * chunk's end is kept as usual, so that the next chunk goes on with it.
   */
  private skipBodyLines(chunk: Buffer, start: number): number {
    const next = chunk.indexOf(LF_DASH, start);
    if (next !== -1) return next + 1;
    const last = chunk.lastIndexOf(LF);
    const partial = last >= start ? last + 1 : start;
    if (partial < chunk.length) this.keep(chunk.subarray(partial));
    return chunk.length;
  }

  /** The first limit the whole message broke, or null. */
  finish(): LimitViolation | null {
    if (this.lineLength > 0) this.endLine();
    return this.violation;
  }

  private keep(piece: Buffer): void {
    this.lineLength += piece.length;
    const room = this.lineRoom() - this.kept;
    if (room <= 0) return;
    const kept = piece.length > room ? piece.subarray(0, room) : piece;
    this.line.push(kept);
    this.kept += kept.length;
  }

  private lineRoom(): number {
    if (this.inHeaders) return this.limits.maxHeaderBytes + 1;
    return this.open.reduce((longest, b) => Math.max(longest, b.length), 0) + BOUNDARY_SLACK;
  }

  private endLine(): void {
    const complete = this.kept === this.lineLength;
    const bytes = this.lineLength;
    if (!this.inHeaders && !(complete && this.startsWithDashes())) {
      // A body line that cannot be a boundary: most of a message, so it is not made into text.
      this.line = [];
      this.kept = 0;
      this.lineLength = 0;
      return;
    }
    const text = Buffer.concat(this.line).toString("latin1").replace(/\r?\n$/, "");
    this.line = [];
    this.kept = 0;
    this.lineLength = 0;
    if (complete && text.startsWith("--") && this.boundary(text.trimEnd())) return;
    if (!this.inHeaders) return;
    this.headerBytes += bytes;
    if (this.headerBytes > this.limits.maxHeaderBytes) {
      this.violation = "header_too_large";
    } else if (text === "") {
      this.endHeaders();
    } else {
      this.headerText += `${text}\n`;
    }
  }

  /** Whether the line kept so far starts with "--" (its first piece may hold one byte only). */
  private startsWithDashes(): boolean {
    if (this.kept < 2) return false;
    const first = this.line[0]!;
    return first[0] === DASH && (first.length > 1 ? first[1] : this.line[1]![0]) === DASH;
  }

  /** Handles a line that may be a boundary of the innermost open multipart or of its parent. */
  private boundary(line: string): boolean {
    for (let depth = this.open.length - 1; depth >= Math.max(0, this.open.length - 2); depth--) {
      const marker = `--${this.open[depth]}`;
      if (line === marker) {
        this.open.length = depth + 1;
        this.startPart();
        return true;
      }
      if (line === `${marker}--`) {
        this.open.length = depth;
        this.inHeaders = false;
        return true;
      }
    }
    return false;
  }

  private startPart(): void {
    this.parts += 1;
    if (this.parts > this.limits.maxMimeParts) this.violation = "too_many_parts";
    this.inHeaders = true;
    this.headerBytes = 0;
    this.headerText = "";
  }

  private endHeaders(): void {
    this.inHeaders = false;
    const boundary = multipartBoundary(this.headerText);
    this.headerText = "";
    if (boundary === null) return;
    this.open.push(boundary);
    if (this.open.length > this.limits.maxMimeDepth) this.violation = "mime_too_deep";
  }
}

/** The boundary of a multipart Content-Type in a header block, or null for any other part. */
export function multipartBoundary(headerBlock: string): string | null {
  const unfolded = headerBlock.replace(/\n[ \t]+/g, " ");
  const contentType = /^content-type[ \t]*:(.*)$/im.exec(unfolded)?.[1];
  if (!contentType || !/^\s*multipart\//i.test(contentType)) return null;
  const param = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]+))/i.exec(contentType);
  const boundary = param?.[1] ?? param?.[2];
  return boundary ? boundary : null;
}
