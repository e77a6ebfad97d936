// Characters a reader cannot see: zero-width spaces and joiners, soft hyphens, bidirectional controls, Unicode tag
// characters (which spell ASCII invisibly) and variation selectors. All of them are removed from the text a reader
// is shown; where they are a trick rather than typography they are reported:
//
// - a zero-width character inside a word of Latin, Greek or Cyrillic letters ("pa\u200Bypal", "ig\u200Bnore"),
//   where it only serves to split the word for a filter (ZWJ and ZWNJ join letters in Arabic and Indic scripts,
//   and ZWSP separates words in Thai: those are not reported);
// - a zero-width character between a word and the dot, "@" or "/" of a domain or address ("paypal\u200B.com"),
//   where it only serves to keep a filter from reading the name;
// - a run of zero-width characters (a message spelled in them), but not a preheader's "&zwnj;&nbsp;" padding;
// - blank-looking letters standing alone: the Hangul fillers (U+3164, U+FFA0, U+115F, U+1160) and the braille
//   blank (U+2800) outside Hangul or braille text, where they pass for a blank name or word;
// - a bidirectional override (U+202D, U+202E) anywhere, and an embedding or isolate in text with no right-to-left
//   letters (where it has no typographic use);
// - tag characters, except in an emoji flag's tag sequence;
// - a run of variation selectors (one after a character picks an emoji's presentation; many carry data).
//
// One forward pass per piece of text, with a little state carried from piece to piece (HTML gives the text of a
// word in several nodes), so the work is linear in the text.
import { isPlainAscii } from "./domains.js";
import { MAX_EVIDENCE_CHARS } from "./limits.js";

export type InvisibleKind = "zero_width_in_word" | "zero_width_run" | "bidi_control" | "tag_characters" | "variation_selectors";

export interface InvisibleFinding {
  readonly kind: InvisibleKind;
  /** The text around it, each invisible character written as <U+XXXX>; at most MAX_EVIDENCE_CHARS characters. */
  readonly evidence: string;
  /** Where the piece of text it was found in starts in its part, plus its index in that piece. */
  readonly offset: number;
}

/** Invisible characters of every kind, for a quick test before the character loop. */
const ANY_INVISIBLE =
  /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0]|\udb40[\udc00-\uddef]/;
/** Zero-width characters that take no part in writing Latin, Greek or Cyrillic (soft hyphens do: not here). */
const ZERO_WIDTH = new Set([
  0x034f, 0x061c, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x180e, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2060, 0x2061,
  0x2062, 0x2063, 0x2064, 0x2800, 0x3164, 0xfeff, 0xffa0,
]);
/** Letters that show as a blank: Hangul fillers and the braille blank, which only Hangul or braille text uses. */
const BLANK_LETTERS = new Set([0x115f, 0x1160, 0x2800, 0x3164, 0xffa0]);
/** Hangul (jamo and syllables) and braille: the text blank letters belong to. */
const HANGUL_OR_BRAILLE = /[\u1100-\u11ff\u2801-\u28ff\u3131-\u318e\uac00-\ud7af\ua960-\ua97f\ud7b0-\ud7ff]/;
/** What follows a word in a domain or address: a zero-width character before it splits the name for a filter. */
const NAME_JOINT = /^[.@/][\p{L}\p{N}]/u;
/** Text that ends inside a URL: a scheme or a domain and its path, with no blank since. */
const IN_URL = /(?:https?:\/\/|www\.|[\p{L}\p{N}-]\.[a-z]{2,}\/)[^\s<>"]*$/u;
/** What continues a URL after a zero-width character inside it. */
const URL_CHARACTER = /^[\p{L}\p{N}/.\-_~%?=&#+]/u;
/** Longest run of zero-width characters in visible text that is still typography. */
const MAX_TYPOGRAPHIC_RUN = 7;
/** Findings kept per part; more of the same say nothing new. */
const MAX_FINDINGS = 20;
const CONTEXT = 24;
/** Characters of tag-spelled text kept. */
const MAX_SPELLED = 10_000;

/** Whether a code point is removed from what a reader is shown. */
export function isInvisible(cp: number): boolean {
  return (
    cp === 0x00ad ||
    ZERO_WIDTH.has(cp) ||
    (cp >= 0x180b && cp <= 0x180f) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x206f) ||
    isVariationSelector(cp) ||
    (cp >= 0xe0000 && cp <= 0xe007f)
  );
}

function isVariationSelector(cp: number): boolean {
  return (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef);
}

/** Letters of the scripts whose words a zero-width character has no business inside. */
const SPLITTABLE = /[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}0-9]/u;
const RTL = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]/;

/**
 * Removes invisible characters from successive pieces of one part (text nodes of an HTML body in document order,
 * or a text part in one piece) and, for pieces a reader sees, reports the tricks among them.
 */
export class InvisibleText {
  private readonly found: InvisibleFinding[] = [];
  /** Bidi embeddings and isolates, reported at the end only if the part has no right-to-left letters. */
  private readonly embeddings: InvisibleFinding[] = [];
  private sawRtl = false;
  /** The last visible character before the current run of invisible ones, and the text before it. */
  private previous = "";
  private tail = "";
  /** A zero-width run not yet closed by a visible character (it may continue in the next piece). */
  private run: { codes: number[]; offset: number; before: string; previous: string } | null = null;
  private selectors = 0;
  private inFlagTags = false;
  /** ASCII spelled in tag characters (U+E0020–U+E007E), which no reader sees and a model may read. */
  private readonly spelled: string[] = [];
  private spelledLength = 0;

  /**
   * `text` without its invisible characters; `offset` is where the piece starts in its part. `ascii`: the caller
   * knows the text is ASCII (a piece of a part it measured whole), so it is not measured again.
   */
  clean(text: string, offset: number, visible: boolean, ascii = false): string {
    // Every invisible character is beyond ASCII: ASCII text (most mail) is told by its UTF-8 length, faster.
    if (ascii || isPlainAscii(text) || !ANY_INVISIBLE.test(text)) {
      if (visible && text.length > 0) this.visibleText(text);
      return text;
    }
    const out: string[] = [];
    let kept = 0;
    let i = 0;
    while (i < text.length) {
      const cp = text.codePointAt(i)!;
      const width = cp > 0xffff ? 2 : 1;
      if (!isInvisible(cp)) {
        i += width;
        continue;
      }
      if (i > kept) {
        const piece = text.slice(kept, i);
        out.push(piece);
        if (visible) this.visibleText(piece);
      }
      if (visible) this.invisible(cp, offset + i);
      i += width;
      kept = i;
    }
    if (kept < text.length) {
      const piece = text.slice(kept);
      out.push(piece);
      if (visible) this.visibleText(piece);
    }
    return out.join("");
  }

  /** The ASCII text spelled in tag characters, if any. */
  tagText(): string {
    return this.spelled.join("");
  }

  /** What was found in the part, once all of it went through `clean`. */
  findings(): InvisibleFinding[] {
    this.closeRun("");
    return this.sawRtl ? this.found : [...this.found, ...this.embeddings].slice(0, MAX_FINDINGS);
  }

  private visibleText(piece: string): void {
    if (!this.sawRtl && RTL.test(piece)) this.sawRtl = true;
    this.closeRun(piece);
    // A variation selector belongs to the character before it; a tag sequence only to the flag that opens it.
    this.selectors = 0;
    this.inFlagTags = piece.endsWith("\u{1f3f4}");
    this.previous = lastCodePoint(piece);
    this.tail = piece.length >= CONTEXT ? piece.slice(-CONTEXT) : (this.tail + piece).slice(-CONTEXT);
  }

  private invisible(cp: number, offset: number): void {
    if (isVariationSelector(cp)) {
      this.selectors++;
      if (this.selectors === 2) this.report("variation_selectors", cp, offset);
      return;
    }
    if (cp >= 0xe0000 && cp <= 0xe007f) {
      if (this.inFlagTags) {
        if (cp === 0xe007f) this.inFlagTags = false;
        return;
      }
      if (cp >= 0xe0020 && cp <= 0xe007e && this.spelledLength < MAX_SPELLED) {
        this.spelled.push(String.fromCharCode(cp - 0xe0000));
        this.spelledLength++;
      }
      if (!this.found.some((f) => f.kind === "tag_characters")) this.report("tag_characters", cp, offset);
      return;
    }
    if (cp === 0x202d || cp === 0x202e) return this.report("bidi_control", cp, offset);
    if ((cp >= 0x202a && cp <= 0x202c) || (cp >= 0x2066 && cp <= 0x2069)) {
      if (this.embeddings.length < MAX_FINDINGS) {
        this.embeddings.push({ kind: "bidi_control", evidence: this.evidence([cp], ""), offset });
      }
      return;
    }
    if (!ZERO_WIDTH.has(cp)) return;
    if (this.run) this.run.codes.push(cp);
    else this.run = { codes: [cp], offset, before: this.tail, previous: this.previous };
  }

  /** Ends a zero-width run at the visible text that follows it (or at the end of the part). */
  private closeRun(next: string): void {
    const run = this.run;
    if (!run) return;
    this.run = null;
    const after = next.slice(0, CONTEXT);
    if (run.codes.length > MAX_TYPOGRAPHIC_RUN) {
      this.push({ kind: "zero_width_run", evidence: evidenceOf(run.before, run.codes, after), offset: run.offset });
    } else if (splitsWordOrName(run.before, run.previous, next)) {
      this.push({ kind: "zero_width_in_word", evidence: evidenceOf(run.before, run.codes, after), offset: run.offset });
    } else if (run.codes.some((cp) => BLANK_LETTERS.has(cp)) && !HANGUL_OR_BRAILLE.test(run.previous) && !HANGUL_OR_BRAILLE.test(firstCodePoint(next))) {
      this.push({ kind: "zero_width_run", evidence: evidenceOf(run.before, run.codes, after), offset: run.offset });
    }
  }

  private report(kind: InvisibleKind, cp: number, offset: number): void {
    this.push({ kind, evidence: this.evidence([cp], ""), offset });
  }

  private evidence(codes: readonly number[], after: string): string {
    return evidenceOf(this.tail, codes, after);
  }

  private push(finding: InvisibleFinding): void {
    if (this.found.length < MAX_FINDINGS) this.found.push(finding);
  }
}

/**
 * Whether a zero-width character between `before` (ending in `previous`) and `next` splits a word ("pa|ypal") or a
 * domain or address at its dot or "@" ("paypal|.com", "paypal.|com", "billing@|acme.com"), or stands anywhere
 * inside a URL ("https://acme.com/|verify-login"); not a sentence's end ("Thanks.|See you": the next word starts
 * with a capital).
 */
function splitsWordOrName(before: string, previous: string, next: string): boolean {
  if (IN_URL.test(before) && URL_CHARACTER.test(next)) return true;
  if (SPLITTABLE.test(previous)) return SPLITTABLE.test(firstCodePoint(next)) || NAME_JOINT.test(next);
  return (previous === "." || previous === "@") && SPLITTABLE.test(before.at(-2) ?? "") && /^[\p{Ll}0-9]/u.test(next);
}

function evidenceOf(before: string, codes: readonly number[], after: string): string {
  const shown = codes.slice(0, 8).map((cp) => `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`).join("");
  const more = codes.length > 8 ? `…(${codes.length})` : "";
  return `${before.slice(-CONTEXT)}${shown}${more}${after}`.slice(0, MAX_EVIDENCE_CHARS);
}

function lastCodePoint(text: string): string {
  if (text.length === 0) return "";
  const low = text.charCodeAt(text.length - 1);
  return low >= 0xdc00 && low <= 0xdfff && text.length > 1 ? text.slice(-2) : text.slice(-1);
}

function firstCodePoint(text: string): string {
  if (text.length === 0) return "";
  return String.fromCodePoint(text.codePointAt(0)!);
}
