// The one shape both a text part and rendered HTML take, so that quote, signature, code and link rules are written
// once: lines of visible text with what the sender's client said about them.
import { MAX_LINES, MAX_TEXT_CHARS } from "./limits.js";

/** A range of a line shown prominently: 2 = big, letter-spaced or monospace; 1 = bold. */
export interface Emphasis {
  readonly start: number;
  readonly end: number;
  readonly level: 1 | 2;
}

export interface Line {
  /** Visible text; for a text part the line as written, ">" quote marks included. */
  readonly text: string;
  /** Quoted by the client: a ">" line, or (HTML) inside a blockquote, a gmail_quote, or after Outlook's reply header. */
  readonly quoted: boolean;
  /** Inside a signature the client marked (HTML only). */
  readonly signature: boolean;
  readonly emphasis: readonly Emphasis[];
}

export interface Anchor {
  /** The href as written (entities decoded), not yet parsed. */
  readonly href: string;
  /** Visible text, else the alt text of an image in it. */
  readonly text: string;
  /** The line the anchor starts on, and where on it (a character index into its text). */
  readonly line: number;
  readonly column: number;
}

export interface Doc {
  readonly lines: readonly Line[];
  /** Visible anchors with an href (HTML only). */
  readonly anchors: readonly Anchor[];
}

const NO_EMPHASIS: readonly Emphasis[] = [];

/** A text part as lines; a line starting with ">" (after blanks) is quoted. */
export function docFromText(text: string): Doc {
  const lines: Line[] = [];
  let start = 0;
  const body = text.length > MAX_TEXT_CHARS ? text.slice(0, MAX_TEXT_CHARS) : text;
  while (start <= body.length && lines.length < MAX_LINES) {
    let end = body.indexOf("\n", start);
    if (end < 0) end = body.length;
    const raw = end > start && body.charCodeAt(end - 1) === 13 ? body.slice(start, end - 1) : body.slice(start, end);
    lines.push({ text: raw.trimEnd(), quoted: raw.charCodeAt(afterBlanks(raw)) === GREATER_THAN, signature: false, emphasis: NO_EMPHASIS });
    start = end + 1;
  }
  return { lines, anchors: [] };
}

/** The text of a line without its ">" quote marks. */
export function unquoted(text: string): string {
  // Most lines are not quoted: told without a regular expression.
  if (text.charCodeAt(afterBlanks(text)) !== GREATER_THAN) return text;
  return text.replace(/^[ \t]*(?:>[ \t]?)+/, "");
}

const GREATER_THAN = 0x3e;

/** Where the spaces and tabs at the start of `text` end. */
function afterBlanks(text: string): number {
  let i = 0;
  while (i < text.length && (text.charCodeAt(i) === 0x20 || text.charCodeAt(i) === 0x09)) i++;
  return i;
}

export function isBlank(line: Line): boolean {
  return line.text.trim() === "";
}

/**
 * `text` without any of `chars` (and whitespace) at its start and end. A loop rather than a regular expression:
 * `/[…]+$/` retries from every position of a long run that is not at the end, which is quadratic.
 */
export function trimChars(text: string, chars: string, ends: "both" | "end" = "both"): string {
  let start = 0;
  let end = text.length;
  while (end > start && isStripped(text[end - 1]!, chars)) end--;
  if (ends === "both") while (start < end && isStripped(text[start]!, chars)) start++;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

function isStripped(c: string, chars: string): boolean {
  return chars.includes(c) || c === " " || c === "\t" || c === "\u00a0" || c === "\n" || c === "\r";
}
