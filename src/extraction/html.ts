// HTML → the lines a reader sees. A small forward-only tokenizer (every scan starts where the last one ended, so
// the work is linear in the input however broken it is) tracks the open elements for what a reader cannot see
// (display:none, zero or tiny font sizes, text coloured like its background, off-screen or clipped boxes, hidden
// preheaders), what the client marked as quoted (blockquote, gmail_quote, Outlook's divRplyFwdMsg) or as a
// signature, and what is shown prominently (big, letter-spaced, monospace or bold text), and collects the anchors
// with their visible text. For the safety analysis (safety.ts) it also keeps, bounded, what a reader does not see
// (hidden text with how it was hidden, comments, templates, chat-role tags), the invisible characters in visible
// text, where each line starts in the HTML and where each anchor ends on its line.
import { decodeHTML, decodeHTMLAttribute } from "entities";
import type { Anchor, Doc, Emphasis, Line } from "./document.js";
import { InvisibleText, type InvisibleFinding } from "./invisible.js";
import {
  MAX_ATTRIBUTE_VALUE,
  MAX_ELEMENT_DEPTH,
  MAX_END_TAG_SEARCH,
  MAX_HIDDEN_CHARS,
  MAX_HIDDEN_RUNS,
  MAX_HTML_CHARS,
  MAX_LINES,
  MAX_LINK_CANDIDATES,
  MAX_LINK_TEXT,
  MAX_STYLE_SHEET_CHARS,
  MAX_VISIBLE_CHARS,
} from "./limits.js";

const VOID = new Set([
  "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
]);
/** Elements whose content is not markup; none of them shows text in a mail client. */
const RAW_TEXT = new Set(["script", "style", "textarea", "title", "xmp", "noscript", "template", "noembed", "noframes", "iframe"]);
/** Elements whose text is a quotation or code shown as such: an instruction in one is quoted, not given. */
const QUOTATION = new Set(["blockquote", "pre", "code", "samp", "q"]);
/** Quotation spans kept per document and per line: enough for any real one, bounded for any other. */
const MAX_QUOTATION_SPANS = 500;
const BLOCK = new Set([
  "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dialog", "dir", "div", "dl", "dt",
  "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "html", "li",
  "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
]);
/** Table cells: a row reads as one line, its cells apart by a space ("Code: | 482913", one digit per box). */
const CELL = new Set(["td", "th"]);
/** Blocks followed by a blank line, as a mail client spaces them. */
const PARAGRAPH = new Set(["p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "table", "ul", "ol", "pre"]);
/** Elements whose start ends an open one of the same kind (`<p>a<p>b`, `<td>a<td>b`), up to the container named. */
const IMPLIED_END = new Map<string, { readonly ends: readonly string[]; readonly within: readonly string[] }>([
  ["p", { ends: ["p"], within: [] }],
  ["td", { ends: ["td", "th"], within: ["tr", "table"] }],
  ["th", { ends: ["td", "th"], within: ["tr", "table"] }],
  ["tr", { ends: ["tr"], within: ["table", "tbody", "thead", "tfoot"] }],
  ["li", { ends: ["li"], within: ["ul", "ol", "menu"] }],
  ["dt", { ends: ["dt", "dd"], within: ["dl"] }],
  ["dd", { ends: ["dt", "dd"], within: ["dl"] }],
  ["option", { ends: ["option"], within: ["select"] }],
]);
/** End tags that may close past an open table cell; any other stays inside the cell. */
const CLOSES_CELLS = new Set(["tr", "tbody", "thead", "tfoot", "table", "blockquote", "body", "html"]);
const EMPHASIS_BY_TAG = new Map<string, 1 | 2>([
  ["b", 1], ["strong", 1], ["th", 1], ["h4", 1], ["h5", 1], ["h6", 1],
  ["h1", 2], ["h2", 2], ["h3", 2], ["big", 2], ["code", 2], ["kbd", 2], ["samp", 2], ["tt", 2], ["pre", 2],
]);
const WHITESPACE = /[\s\u00a0\u2000-\u200a\u202f\u205f\u3000]+/g;
const DEFAULT_FONT_PX = 16;
/** Text smaller than this (in px) is not meant to be read. */
const TINY_FONT_PX = 3;
/** Classes and ids whose style sheet colours are remembered. */
const MAX_SHEET_SELECTORS = 1_000;
const BIG_FONT_PX = 20;
/** A mail client's page is white unless the message says otherwise. */
const DEFAULT_BACKGROUND: Rgb = { r: 255, g: 255, b: 255 };
/** Text with less contrast than this against its background is not meant to be read (#eee on white is 1.16). */
const MIN_CONTRAST = 1.2;
/** Tags of chat templates and tool calls: markup no mail needs, and a model reading the raw HTML sees. */
const ROLE_TAGS = new Set([
  "system", "assistant", "user", "human", "instructions", "instruction", "prompt", "system_prompt", "tool_call",
  "tool_use", "function_calls", "function_call", "invoke", "im_start", "im_end",
]);

/**
 * How text was kept from the reader: by its element's style (display:none, visibility:hidden, opacity 0, a
 * collapsed box, off the page, clipped), by the `hidden` attribute or a style sheet's rule, by a size too small to
 * read, by a colour that does not stand out from its background, or by being a comment or a template.
 */
export type HidingKind =
  | "display_none"
  | "visibility_hidden"
  | "opacity_zero"
  | "zero_size"
  | "offscreen"
  | "clipped"
  | "hidden_attribute"
  | "style_sheet"
  | "tiny_font"
  | "same_colour"
  | "comment"
  | "conditional_comment"
  | "template";

/**
 * Hidden text in document order: the hidden pieces of one block (a div, a paragraph, a cell) with no visible text
 * between them form one run.
 */
export interface HiddenRun {
  readonly text: string;
  /** Where its first piece starts in the HTML. */
  readonly offset: number;
  /** How its first piece was hidden. */
  readonly how: HidingKind;
  /**
   * Visible characters rendered before it outside links: 0 for a preheader at the top, or after only a "View in
   * browser" link.
   */
  readonly visibleBefore: number;
}

/** Where an anchor's text ends on its line: safe text shows the link's target there. */
export interface LinkEnd {
  /** Its index in `anchors`. */
  readonly anchor: number;
  readonly line: number;
  readonly column: number;
  /** The anchor shows only an image: its alt text is shown with the target. */
  readonly imageOnly: boolean;
  /** An image link with no text beside it: shown on a line of its own, before `line`. */
  readonly alone: boolean;
}

/** A rendered HTML body: the lines and anchors, and what the safety analysis reads. */
export interface HtmlDoc extends Doc {
  /** Where each line's first text starts in the HTML (-1 for a blank line). */
  readonly lineOffsets: readonly number[];
  readonly linkEnds: readonly LinkEnd[];
  readonly hidden: readonly HiddenRun[];
  /** Invisible characters used as tricks in visible text. */
  readonly invisible: readonly InvisibleFinding[];
  /** ASCII spelled in tag characters in visible text (what a model reads and a person does not see). */
  readonly tagText: string;
  /** Chat-role and tool-call tags (`<system>`, `</assistant>`, `<tool_call>`) with where they are. */
  readonly roleTags: readonly { readonly name: string; readonly offset: number }[];
  /** Lines all of whose text is a quotation or code (`<blockquote>`, `<pre>`, `<code>`, `<q>`): shown as quoted. */
  readonly quotationLines: ReadonlySet<number>;
  /** Quotation or code inside a line (an inline `<code>`), by line and columns. */
  readonly quotationSpans: readonly QuotationSpan[];
}

export interface QuotationSpan {
  readonly line: number;
  readonly start: number;
  readonly end: number;
}

interface Rgb {
  readonly r: number;
  readonly g: number;
  readonly b: number;
}

interface Frame {
  readonly name: string;
  /** Hidden by this element or an ancestor, and how; no descendant can show again. */
  readonly hiddenBy: HidingKind | null;
  readonly fontPx: number;
  /** The text colour, "transparent" for one with no opacity, null when none was set. */
  readonly color: Rgb | "transparent" | null;
  readonly background: Rgb | null;
  readonly emphasis: 0 | 1 | 2;
  readonly quoted: boolean;
  readonly signature: boolean;
  readonly pre: boolean;
  /** Inside a quotation or code element (blockquote, pre, code, samp, q). */
  readonly quotation: boolean;
  readonly anchor: boolean;
}

/** An anchor being read; its lines are known only when the lines it is on are pushed. */
interface AnchorRecord {
  readonly href: string;
  text: string;
  alt: string;
  alone: boolean;
  line: number;
  column: number;
  endLine: number;
  endColumn: number;
}

const ROOT: Frame = {
  name: "#root",
  hiddenBy: null,
  fontPx: DEFAULT_FONT_PX,
  color: null,
  background: null,
  emphasis: 0,
  quoted: false,
  signature: false,
  pre: false,
  quotation: false,
  anchor: false,
};

/** Renders (the first MAX_HTML_CHARS of) an HTML body into visible lines and anchors. */
export function docFromHtml(source: string): HtmlDoc {
  const html = source.length > MAX_HTML_CHARS ? source.slice(0, MAX_HTML_CHARS) : source;
  const r = new Renderer();
  const n = html.length;
  let i = 0;
  while (i < n && !r.full()) {
    const lt = html.indexOf("<", i);
    if (lt < 0) {
      r.text(html.slice(i), i);
      break;
    }
    if (lt > i) r.text(html.slice(i, lt), i);
    const next = html.charCodeAt(lt + 1);
    if (next === 0x21 /* ! */) {
      // Comments (including Outlook's conditional ones, whose content is for Outlook only), doctypes, CDATA.
      const comment = html.startsWith("<!--", lt);
      const end = comment ? html.indexOf("-->", lt + 2) : html.indexOf(">", lt + 2);
      if (comment) r.comment(html, lt + 4, end < 0 ? n : end);
      i = end < 0 ? n : end + (comment ? 3 : 1);
    } else if (next === 0x3f /* ? */) {
      const end = html.indexOf(">", lt + 2);
      i = end < 0 ? n : end + 1;
    } else if (next === 0x2f /* / */) {
      const tag = readTag(html, lt + 2);
      if (tag.name) r.endTag(tag.name, lt);
      i = tag.end;
    } else if (isAsciiLetter(next)) {
      const tag = readTag(html, lt + 1);
      i = tag.end;
      if (RAW_TEXT.has(tag.name)) {
        const close = new RegExp(`</${tag.name}`, "gi");
        close.lastIndex = i;
        const found = close.exec(html);
        const contentEnd = found ? found.index : n;
        if (tag.name === "style") r.styleSheet(html.slice(i, Math.min(contentEnd, i + MAX_STYLE_SHEET_CHARS)));
        if (tag.name === "template") r.hiddenMarkup(html, i, contentEnd, "template");
        i = found ? skipPast(html, contentEnd, ">") : n;
      } else {
        r.startTag(tag.name, tag.attributes, tag.selfClosing, lt);
      }
    } else {
      r.text("<", lt);
      i = lt + 1;
    }
  }
  return r.finish();
}

interface Tag {
  readonly name: string;
  readonly attributes: ReadonlyMap<string, string>;
  readonly selfClosing: boolean;
  /** Where scanning goes on: just past the tag's ">", or the end of the input. */
  readonly end: number;
}

/** Reads a tag's name and attributes from `start` (just past "<" or "</") to its ">", honouring quotes. */
function readTag(html: string, start: number): Tag {
  const n = html.length;
  let p = start;
  while (p < n && !isTagNameEnd(html.charCodeAt(p))) p++;
  const name = html.slice(start, p).toLowerCase();
  const attributes = new Map<string, string>();
  let selfClosing = false;
  while (p < n) {
    let c = html.charCodeAt(p);
    if (c === 0x3e /* > */) return { name, attributes, selfClosing, end: p + 1 };
    if (isSpace(c) || c === 0x2f /* / */) {
      selfClosing = c === 0x2f;
      p++;
      continue;
    }
    selfClosing = false;
    const nameStart = p;
    while (p < n && !isAttributeNameEnd(html.charCodeAt(p))) p++;
    // A stray "=" or quote where a name should be: step over it so the loop always advances.
    if (p === nameStart) p++;
    const attrName = html.slice(nameStart, p).toLowerCase();
    while (p < n && isSpace(html.charCodeAt(p))) p++;
    let value = "";
    if (html.charCodeAt(p) === 0x3d /* = */) {
      p++;
      while (p < n && isSpace(html.charCodeAt(p))) p++;
      c = html.charCodeAt(p);
      if (c === 0x22 || c === 0x27) {
        const close = html.indexOf(c === 0x22 ? '"' : "'", p + 1);
        const valueEnd = close < 0 ? n : close;
        value = html.slice(p + 1, Math.min(valueEnd, p + 1 + MAX_ATTRIBUTE_VALUE));
        p = close < 0 ? n : close + 1;
      } else {
        const valueStart = p;
        while (p < n && !isSpace(html.charCodeAt(p)) && html.charCodeAt(p) !== 0x3e) p++;
        value = html.slice(valueStart, Math.min(p, valueStart + MAX_ATTRIBUTE_VALUE));
      }
    }
    if (attrName && !attributes.has(attrName) && attributes.size < 64) {
      attributes.set(attrName, value.includes("&") ? decodeHTMLAttribute(value) : value);
    }
  }
  return { name, attributes, selfClosing, end: n };
}

function skipPast(html: string, from: number, char: string): number {
  const end = html.indexOf(char, from);
  return end < 0 ? html.length : end + 1;
}

function isAsciiLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
}
function isTagNameEnd(c: number): boolean {
  return isSpace(c) || c === 0x2f || c === 0x3e;
}
function isAttributeNameEnd(c: number): boolean {
  return isSpace(c) || c === 0x2f || c === 0x3e || c === 0x3d;
}

class Renderer {
  private readonly stack: Frame[] = [ROOT];
  private readonly lines: Line[] = [];
  private readonly lineOffsets: number[] = [];
  private readonly anchors: AnchorRecord[] = [];
  /** Anchors whose text started or ended in the line being built: they learn its index when it is pushed. */
  private awaiting: { record: AnchorRecord; end: boolean }[] = [];
  /** Classes and ids a top-level style sheet rule hides. */
  private readonly hiddenSelectors = new Set<string>();
  /** Text and background colours top-level style sheet rules give a class or an id (a button's `.btn{…}`). */
  private readonly sheetColours = new Map<string, { color?: string; background?: string }>();
  private anchor: AnchorRecord | null = null;
  private readonly hidden: HiddenRun[] = [];
  /** The run hidden text is added to until visible text interrupts it. */
  private hiddenRun: { pieces: string[]; offset: number; how: HidingKind; visibleBefore: number } | null = null;
  private hiddenChars = 0;
  private readonly invisible = new InvisibleText();
  private readonly roleTags: { name: string; offset: number }[] = [];
  /** Where the line being built starts in the HTML. */
  private lineOffset = -1;
  /** Visible characters rendered outside links so far. */
  private visibleOutsideLinks = 0;
  /** The line being built, in pieces: appending to one long string and reading its end would flatten it each time. */
  private pieces: string[] = [];
  private bufferLength = 0;
  private lastChar = "";
  private bufferHasText = false;
  private emphasis: Emphasis[] = [];
  private lineQuoted = false;
  /** Whether all text of the line being built is quotation or code (null before any). */
  private lineQuotation: boolean | null = null;
  private readonly quotationLines = new Set<number>();
  private readonly quotationSpans: QuotationSpan[] = [];
  /** Quotation in the line being built, by columns (its line is known when it is pushed). */
  private lineSpans: { start: number; end: number }[] = [];
  private lineSignature = false;
  private paragraphGap = false;
  /** Set at Outlook's reply header: everything after it is the quoted message. */
  private restQuoted = false;
  private visible = 0;

  full(): boolean {
    return this.visible >= MAX_VISIBLE_CHARS || this.lines.length >= MAX_LINES;
  }

  private get top(): Frame {
    return this.stack[this.stack.length - 1]!;
  }

  text(raw: string, offset: number): void {
    const frame = this.top;
    const hiddenBy = hidingOf(frame);
    if (hiddenBy) return this.hiddenText(raw, offset, hiddenBy);
    const text = this.invisible.clean(raw.includes("&") ? decodeHTML(raw) : raw, offset, true);
    if (frame.pre) {
      const parts = text.split("\n");
      parts.forEach((part, index) => {
        if (index > 0) this.lineBreak();
        this.append(part.replace(WHITESPACE, " "), frame, offset);
      });
    } else {
      this.append(text.replace(WHITESPACE, " "), frame, offset);
    }
  }

  /** A comment's text (tags taken out): hidden from every reader, Outlook's conditional ones from most. */
  comment(html: string, start: number, end: number): void {
    if (!html.startsWith("[if", start)) return this.hiddenMarkup(html, start, end, "comment");
    // Outlook's "[if mso]>" … "<![endif]": the condition is not content.
    const open = html.indexOf("]>", start);
    this.hiddenMarkup(html, open >= 0 && open < Math.min(end, start + 200) ? open + 2 : start, end, "conditional_comment");
  }

  /** The text of markup no reader sees (a comment, a template), as one hidden run of its own. */
  hiddenMarkup(html: string, start: number, end: number, how: HidingKind): void {
    if (this.hiddenChars >= MAX_HIDDEN_CHARS || end <= start) return;
    this.endHiddenRun();
    const text = textOfMarkup(html, start, Math.min(end, start + MAX_HIDDEN_CHARS - this.hiddenChars));
    if (text) this.hiddenText(text, start, how);
    this.endHiddenRun();
  }

  private hiddenText(raw: string, offset: number, how: HidingKind): void {
    if (this.hiddenChars >= MAX_HIDDEN_CHARS || (this.hiddenRun === null && this.hidden.length >= MAX_HIDDEN_RUNS)) return;
    const bounded = raw.length > MAX_HIDDEN_CHARS - this.hiddenChars ? raw.slice(0, MAX_HIDDEN_CHARS - this.hiddenChars) : raw;
    const decoded = bounded.includes("&") ? decodeHTML(bounded) : bounded;
    const text = this.invisible.clean(decoded, offset, false).replace(WHITESPACE, " ");
    if (!text.trim()) return;
    this.hiddenChars += text.length;
    if (this.hiddenRun) this.hiddenRun.pieces.push(text);
    else this.hiddenRun = { pieces: [text], offset, how, visibleBefore: this.visibleOutsideLinks };
  }

  private endHiddenRun(): void {
    const run = this.hiddenRun;
    if (!run) return;
    this.hiddenRun = null;
    const text = run.pieces.join("").replace(WHITESPACE, " ").trim();
    if (text) this.hidden.push({ text, offset: run.offset, how: run.how, visibleBefore: run.visibleBefore });
  }

  private append(text: string, frame: Frame, offset: number): void {
    let piece = text;
    if (piece.startsWith(" ") && (this.bufferLength === 0 || this.lastChar === " ")) piece = piece.slice(1);
    const room = MAX_VISIBLE_CHARS - this.visible;
    if (piece.length > room) piece = piece.slice(0, Math.max(0, room));
    if (!piece) return;
    const start = this.bufferLength;
    this.pieces.push(piece);
    this.bufferLength += piece.length;
    this.lastChar = piece[piece.length - 1]!;
    this.visible += piece.length;
    if (piece.trim()) {
      this.endHiddenRun();
      if (!frame.anchor) this.visibleOutsideLinks += piece.length;
      if (this.lineOffset < 0) this.lineOffset = offset;
      const anchor = this.anchor;
      if (anchor && anchor.column < 0) {
        anchor.column = start + (piece.length - piece.trimStart().length);
        this.awaiting.push({ record: anchor, end: false });
      }
      this.bufferHasText = true;
      this.lineQuoted ||= frame.quoted || this.restQuoted;
      this.lineQuotation = (this.lineQuotation ?? true) && frame.quotation;
      if (frame.quotation) this.quotationSpan(start, this.bufferLength);
      this.lineSignature ||= frame.signature;
      if (frame.emphasis > 0) this.emphasis.push({ start, end: this.bufferLength, level: frame.emphasis as 1 | 2 });
    }
    if (this.anchor && this.anchor.text.length < MAX_LINK_TEXT) this.anchor.text += piece.slice(0, MAX_LINK_TEXT);
  }

  startTag(name: string, attributes: ReadonlyMap<string, string>, selfClosing: boolean, offset: number): void {
    if (ROLE_TAGS.has(name)) this.roleTag(name, offset);
    if (name === "br") return this.lineBreak();
    const implied = IMPLIED_END.get(name);
    if (implied) this.endImplied(implied.ends, implied.within);
    if (name === "a") this.closeAnchor();
    const id = (attributes.get("id") ?? "").toLowerCase();
    // Outlook (desktop and web) puts its reply header in divRplyFwdMsg (x_divRplyFwdMsg once re-rendered) after an
    // empty appendonsend div; older Outlook on the web marks the same place with hr#stopSpelling.
    if (id.endsWith("divrplyfwdmsg") || id.endsWith("appendonsend") || id === "stopspelling") {
      this.flush();
      this.restQuoted = true;
    }
    if (BLOCK.has(name)) this.flush();
    else if (CELL.has(name) && this.bufferLength > 0 && this.lastChar !== " ") this.pushSpace();
    // Hidden text in another block is another piece of hidden text (a preheader, then something else).
    if (BLOCK.has(name) || CELL.has(name)) this.endHiddenRun();
    const frame = this.frameFor(name, attributes, this.top);
    if (name === "img") return this.image(attributes, frame);
    if (name === "a") this.openAnchor(attributes, frame);
    if (!VOID.has(name) && !selfClosing && this.stack.length < MAX_ELEMENT_DEPTH) this.stack.push(frame);
  }

  /** An end tag; `offset` is where it is in the HTML, -1 for one implied by another start tag. */
  endTag(name: string, offset = -1): void {
    if (offset >= 0 && ROLE_TAGS.has(name)) this.roleTag(`/${name}`, offset);
    if (name === "br") return this.lineBreak();
    const found = this.findOpen(name);
    if (found < 0) return;
    if (BLOCK.has(name)) this.flush();
    if (BLOCK.has(name) || CELL.has(name)) this.endHiddenRun();
    if (PARAGRAPH.has(name)) this.paragraphGap = true;
    this.stack.length = found;
    if (this.anchor && !this.top.anchor) this.closeAnchor();
  }

  /**
   * Top-level rules of a <style> sheet that hide a class, an id or an attribute (a preheader's
   * `.preheader{display:none}`, `[data-note]{display:none}`). A class a @media block shows again (a phone-only
   * summary: `.m{display:none}` then `@media (max-width:600px){.m{display:block !important}}`) is shown on some
   * screens, so not hidden text.
   */
  styleSheet(css: string): void {
    const rules = sheetRules(css);
    const shownUnderMedia = new Set<string>();
    for (const rule of rules) {
      if (!rule.media || !showsElement(declarations(rule.body))) continue;
      for (const selector of rule.selector.split(",")) {
        const key = selectorKey(selector);
        if (key) shownUnderMedia.add(key);
      }
    }
    for (const rule of rules) {
      if (rule.media) continue;
      const style = declarations(rule.body);
      const hides = hidesElement(style) !== null;
      const color = style.get("color");
      const background = style.get("background-color") ?? style.get("background");
      if (!hides && color === undefined && background === undefined) continue;
      for (const selector of rule.selector.split(",")) {
        const key = selectorKey(selector);
        if (!key) continue;
        if (hides && !shownUnderMedia.has(key)) this.hiddenSelectors.add(key);
        if ((color !== undefined || background !== undefined) && this.sheetColours.size < MAX_SHEET_SELECTORS) {
          const seen = this.sheetColours.get(key) ?? {};
          this.sheetColours.set(key, { color: color ?? seen.color, background: background ?? seen.background });
        }
      }
    }
  }

  finish(): HtmlDoc {
    this.closeAnchor();
    this.flush();
    this.endHiddenRun();
    // Image links after the last line of text: they start on the last line, and are shown after it.
    for (const { record, end } of this.awaiting) {
      if (end) {
        record.endLine = this.lines.length;
        record.endColumn = 0;
        record.alone = true;
      } else {
        record.line = Math.max(0, this.lines.length - 1);
      }
    }
    this.awaiting = [];
    const anchors: Anchor[] = this.anchors.map((a) => ({ href: a.href, text: a.text, line: a.line, column: a.column }));
    const linkEnds: LinkEnd[] = this.anchors.map((a, index) => ({
      anchor: index,
      line: a.endLine,
      column: a.endColumn,
      imageOnly: a.text === a.alt && a.alt !== "",
      alone: a.alone,
    }));
    return {
      lines: this.lines,
      anchors,
      lineOffsets: this.lineOffsets,
      linkEnds,
      hidden: this.hidden,
      invisible: this.invisible.findings(),
      tagText: this.invisible.tagText(),
      roleTags: this.roleTags,
      quotationLines: this.quotationLines,
      quotationSpans: this.quotationSpans,
    };
  }

  private roleTag(name: string, offset: number): void {
    if (this.roleTags.length < MAX_HIDDEN_RUNS) this.roleTags.push({ name, offset });
  }

  /** The stack index of the open element an end tag closes, or -1 when it closes none. */
  private findOpen(name: string): number {
    const lowest = Math.max(1, this.stack.length - MAX_END_TAG_SEARCH);
    for (let k = this.stack.length - 1; k >= lowest; k--) {
      const open = this.stack[k]!.name;
      if (open === name) return k;
      // A stray end tag does not close the table cell or the quote it stands in.
      if ((open === "td" || open === "th") && !CLOSES_CELLS.has(name)) return -1;
      if (open === "blockquote" && name !== "body" && name !== "html") return -1;
    }
    return -1;
  }

  private endImplied(ends: readonly string[], within: readonly string[]): void {
    const lowest = Math.max(1, this.stack.length - MAX_END_TAG_SEARCH);
    for (let k = this.stack.length - 1; k >= lowest; k--) {
      const open = this.stack[k]!.name;
      if (ends.includes(open)) return this.endTag(open);
      if (within.length === 0 || within.includes(open) || open === "blockquote") return;
    }
  }

  private frameFor(name: string, attributes: ReadonlyMap<string, string>, parent: Frame): Frame {
    if (attributes.size === 0 && !TAG_FONT_PX.has(name) && !EMPHASIS_BY_TAG.has(name) && name !== "blockquote" && (this.hiddenSelectors.size === 0 || !this.hiddenSelectors.has(`<${name}>`))) {
      // Most elements of a large document carry nothing of their own: they inherit everything.
      return parent.name === name
        ? parent
        : { ...parent, name, pre: parent.pre || name === "pre", quotation: parent.quotation || QUOTATION.has(name), anchor: parent.anchor || name === "a" };
    }
    const style = declarations(attributes.get("style") ?? "");
    const classes = (attributes.get("class") ?? "").toLowerCase().split(/\s+/).filter(Boolean);
    const id = (attributes.get("id") ?? "").toLowerCase();
    let hiddenBy: HidingKind | null = parent.hiddenBy ?? (attributes.has("hidden") ? "hidden_attribute" : hidesElement(style));
    if (!hiddenBy && this.hiddenSelectors.size > 0) {
      const bySheet =
        classes.some((c) => this.hiddenSelectors.has(`.${c}`)) ||
        (id !== "" && this.hiddenSelectors.has(`#${id}`)) ||
        this.hiddenSelectors.has(`<${name}>`) ||
        [...attributes.keys()].some((a) => this.hiddenSelectors.has(`[${a}]`));
      if (bySheet) hiddenBy = "style_sheet";
    }
    const fontPx = fontSize(style, attributes.get("size"), name, parent.fontPx);
    // Inline style first, then the style sheet's rules for the element's classes and id, then the old attributes.
    const sheet = this.sheetColours.size > 0 ? this.sheetColoursOf(classes, id) : {};
    const declaredColour = colour(style.get("color") ?? sheet.color ?? (name === "font" ? attributes.get("color") : undefined));
    const color = declaredColour === null ? parent.color : declaredColour.a < MIN_ALPHA ? "transparent" : declaredColour;
    const declaredBackground = colour(
      style.get("background-color") ?? style.get("background") ?? sheet.background ?? attributes.get("bgcolor"),
    );
    // A transparent background shows the one behind it.
    const background = declaredBackground === null || declaredBackground.a < MIN_ALPHA ? parent.background : declaredBackground;
    let emphasis: 0 | 1 | 2 = parent.emphasis;
    const own = ownEmphasis(name, style, fontPx, parent.fontPx);
    if (own > emphasis) emphasis = own;
    const smartmail = (attributes.get("data-smartmail") ?? "").toLowerCase();
    return {
      name,
      hiddenBy,
      fontPx,
      color,
      background,
      emphasis,
      quoted:
        parent.quoted ||
        name === "blockquote" ||
        classes.some((c) => c === "gmail_quote" || c === "gmail_quote_container" || c === "yahoo_quoted" || c === "moz-cite-prefix"),
      signature:
        parent.signature ||
        smartmail === "gmail_signature" ||
        id === "signature" ||
        id.startsWith("ms-outlook-mobile-signature") ||
        classes.some((c) => c === "gmail_signature" || c === "moz-signature"),
      pre: parent.pre || name === "pre",
      quotation: parent.quotation || QUOTATION.has(name),
      anchor: parent.anchor || name === "a",
    };
  }

  private sheetColoursOf(classes: readonly string[], id: string): { color?: string; background?: string } {
    let found: { color?: string; background?: string } = {};
    for (const key of [...classes.map((c) => `.${c}`), ...(id ? [`#${id}`] : [])]) {
      const rule = this.sheetColours.get(key);
      if (rule) found = { color: rule.color ?? found.color, background: rule.background ?? found.background };
    }
    return found;
  }

  private image(attributes: ReadonlyMap<string, string>, frame: Frame): void {
    // Images show no text; an image's alt text only names the link it sits in. Tracking pixels name nothing.
    if (!this.anchor || hidingOf(frame) || isPixel(attributes)) return;
    const alt = (attributes.get("alt") ?? "").replace(WHITESPACE, " ").trim();
    if (alt && !this.anchor.alt) this.anchor.alt = alt.slice(0, MAX_LINK_TEXT);
  }

  private openAnchor(attributes: ReadonlyMap<string, string>, frame: Frame): void {
    const href = attributes.get("href");
    if (href === undefined || hidingOf(frame) || this.anchors.length >= MAX_LINK_CANDIDATES) return;
    this.anchor = { href, text: "", alt: "", alone: false, line: -1, column: -1, endLine: -1, endColumn: -1 };
  }

  private closeAnchor(): void {
    const a = this.anchor;
    if (!a) return;
    this.anchor = null;
    const text = a.text.replace(WHITESPACE, " ").trim() || a.alt;
    // An anchor with nothing to see (empty, or around a pixel) is not a link a reader could follow.
    if (!text) {
      this.awaiting = this.awaiting.filter((w) => w.record !== a);
      return;
    }
    a.text = text.slice(0, MAX_LINK_TEXT);
    a.alone = a.column < 0 && !this.bufferHasText;
    if (a.column < 0) {
      a.column = this.bufferLength;
      this.awaiting.push({ record: a, end: false });
    }
    a.endColumn = this.bufferLength;
    this.awaiting.push({ record: a, end: true });
    this.anchors.push(a);
  }

  private lineBreak(): void {
    if (this.bufferHasText) this.flush();
    else if (this.lines.length > 0 && this.lines[this.lines.length - 1]!.text !== "") this.push(blank(this.top, this.restQuoted));
    this.clearBuffer();
  }

  private flush(): void {
    if (this.bufferHasText) {
      const text = this.pieces.join("").trimEnd();
      if (this.paragraphGap && this.lines.length > 0 && this.lines[this.lines.length - 1]!.text !== "") {
        this.push(blank(this.top, this.restQuoted || this.lineQuoted));
      }
      this.push({ text, quoted: this.lineQuoted, signature: this.lineSignature, emphasis: this.emphasis }, this.lineOffset);
      if (this.lineQuotation) this.quotationLines.add(this.lines.length - 1);
      for (const span of this.lineSpans) {
        if (this.quotationSpans.length < MAX_QUOTATION_SPANS) this.quotationSpans.push({ line: this.lines.length - 1, ...span });
      }
      this.paragraphGap = false;
      const index = this.lines.length - 1;
      for (const { record, end } of this.awaiting) {
        if (end) {
          record.endLine = index;
          record.endColumn = Math.min(record.endColumn, text.length);
        } else {
          record.line = index;
        }
      }
      this.awaiting = this.awaiting.filter((w) => !w.end && w.record.line < 0);
    }
    this.clearBuffer();
    this.emphasis = [];
    this.lineQuoted = false;
    this.lineQuotation = null;
    this.lineSpans = [];
    this.lineSignature = false;
  }

  /** Columns of quotation text in the line being built; a piece right after the last one extends it. */
  private quotationSpan(start: number, end: number): void {
    const last = this.lineSpans[this.lineSpans.length - 1];
    if (last && start - last.end <= 1) last.end = end;
    else if (this.lineSpans.length < MAX_QUOTATION_SPANS) this.lineSpans.push({ start, end });
  }

  private pushSpace(): void {
    this.pieces.push(" ");
    this.bufferLength += 1;
    this.visible += 1;
    this.lastChar = " ";
  }

  private clearBuffer(): void {
    this.pieces = [];
    this.bufferLength = 0;
    this.lastChar = "";
    this.bufferHasText = false;
    this.lineOffset = -1;
  }

  private push(line: Line, offset = -1): void {
    if (this.lines.length < MAX_LINES) {
      this.lines.push(line);
      this.lineOffsets.push(offset);
    }
  }
}

function blank(frame: Frame, quoted: boolean): Line {
  return { text: "", quoted: frame.quoted || quoted, signature: frame.signature, emphasis: [] };
}

/** How the text of an element is kept from the reader, or null when it shows. */
function hidingOf(frame: Frame): HidingKind | null {
  if (frame.hiddenBy) return frame.hiddenBy;
  if (frame.fontPx < TINY_FONT_PX) return "tiny_font";
  if (frame.color === null) return null;
  if (frame.color === "transparent") return "same_colour";
  return contrast(frame.color, frame.background ?? DEFAULT_BACKGROUND) < MIN_CONTRAST ? "same_colour" : null;
}

/** The WCAG contrast ratio of two colours: 1 for the same colour, 21 for black on white. */
function contrast(a: Rgb, b: Rgb): number {
  const la = luminance(a);
  const lb = luminance(b);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

function luminance({ r, g, b }: Rgb): number {
  const channel = (v: number) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

/** CSS declarations, lower-cased, without !important; the last of a property wins, as in CSS. */
function declarations(style: string): Map<string, string> {
  const map = new Map<string, string>();
  if (!style) return map;
  for (const part of style.slice(0, 2_000).split(";")) {
    const colon = part.indexOf(":");
    if (colon < 0) continue;
    const property = part.slice(0, colon).trim().toLowerCase();
    const value = part.slice(colon + 1).replace("!important", "").trim().toLowerCase();
    if (property) map.set(property, value);
  }
  return map;
}

/** Whether declarations hide an element and all its content from a reader, and how. */
function hidesElement(style: ReadonlyMap<string, string>): HidingKind | null {
  if (style.size === 0) return null;
  if (style.get("display") === "none") return "display_none";
  const visibility = style.get("visibility");
  if (visibility === "hidden" || visibility === "collapse") return "visibility_hidden";
  const opacity = style.get("opacity");
  if (opacity !== undefined && fraction(opacity) <= 0.05) return "opacity_zero";
  const filter = style.get("filter");
  const filterOpacity = filter === undefined ? null : /opacity\(\s*([\d.]+%?)\s*\)/.exec(filter);
  if (filterOpacity && fraction(filterOpacity[1]!) <= 0.05) return "opacity_zero";
  // Collapsed boxes (max-height:0, width:0, the 1px box of a screen-reader-only element) hide what overflows them.
  const overflow = style.get("overflow") ?? style.get("overflow-x") ?? style.get("overflow-y");
  if (overflow === "hidden" || overflow === "clip") {
    for (const property of ["max-height", "height", "max-width", "width"]) {
      const value = style.get(property);
      if (value !== undefined && /^(?:0(?:\.0*)?|1)(?:px|pt|em|rem|%)?$/.test(value) && !/^1(?:em|rem|%)$/.test(value)) return "zero_size";
    }
  }
  const transform = style.get("transform");
  if (transform !== undefined) {
    // Scaled to (almost) nothing, or moved a page away ("translateX(-9999px)").
    const scale = /scale[xy]?\(\s*([\d.]+)\s*[,)]/.exec(transform);
    if (scale && Number.parseFloat(scale[1]!) <= 0.05) return "zero_size";
    const translate = /translate[xy3d]*\(\s*(-?[\d.]+)px(?:\s*,\s*(-?[\d.]+)px)?/.exec(transform);
    if (translate && (Math.abs(Number.parseFloat(translate[1]!)) >= 1000 || Math.abs(Number.parseFloat(translate[2] ?? "0")) >= 1000)) return "offscreen";
  }
  // Letters drawn on top of each other.
  const spacing = style.get("letter-spacing");
  if (spacing !== undefined && Number.parseFloat(spacing) <= -50) return "zero_size";
  const clip = style.get("clip");
  if (clip !== undefined && /^rect\(\s*0(?:px)?[\s,]+0(?:px)?[\s,]+0(?:px)?[\s,]+0(?:px)?\s*\)$/.test(clip)) return "clipped";
  const clipPath = style.get("clip-path");
  if (clipPath !== undefined && /^(?:inset\(\s*(?:50|100)%|circle\(\s*0)/.test(clipPath)) return "clipped";
  // Text pushed out of its clipped box ("text-indent:100%; white-space:nowrap; overflow:hidden").
  const indent = style.get("text-indent");
  if ((overflow === "hidden" || overflow === "clip") && indent !== undefined && (/^\d{3,}(?:\.\d+)?%$/.test(indent) || Number.parseFloat(indent) >= 1000)) return "offscreen";
  // Text pushed off the page.
  for (const property of ["text-indent", "left", "top", "right", "margin-left", "margin-top"]) {
    const value = style.get(property);
    if (value !== undefined && Number.parseFloat(value) <= -1000) return "offscreen";
  }
  return null;
}

const FONT_KEYWORDS = new Map([
  ["xx-small", 9], ["x-small", 10], ["small", 13], ["medium", 16], ["large", 18], ["x-large", 24], ["xx-large", 32], ["xxx-large", 48],
]);
const TAG_FONT_PX = new Map([["h1", 32], ["h2", 24], ["h3", 19], ["big", 19]]);
/** <font size="1"> … <font size="7">. */
const FONT_SIZE_ATTRIBUTE = [0, 10, 13, 16, 18, 24, 32, 48];

function fontSize(style: ReadonlyMap<string, string>, sizeAttribute: string | undefined, name: string, parentPx: number): number {
  const declared = style.get("font-size") ?? fontShorthandSize(style.get("font"));
  if (declared !== undefined) {
    const keyword = FONT_KEYWORDS.get(declared);
    if (keyword !== undefined) return keyword;
    const m = /^(-?(?:\d+(?:\.\d+)?|\.\d+))(px|pt|em|rem|%)?$/.exec(declared);
    if (m) {
      const v = Number.parseFloat(m[1]!);
      switch (m[2]) {
        case "pt":
          return v * (4 / 3);
        case "em":
          return v * parentPx;
        case "rem":
          return v * DEFAULT_FONT_PX;
        case "%":
          return (v / 100) * parentPx;
        default:
          return v;
      }
    }
  }
  if (name === "font" && sizeAttribute !== undefined) {
    const size = Number.parseInt(sizeAttribute, 10);
    if (size >= 1 && size <= 7) return FONT_SIZE_ATTRIBUTE[size]!;
  }
  return TAG_FONT_PX.get(name) ?? parentPx;
}

function fontShorthandSize(font: string | undefined): string | undefined {
  if (!font) return undefined;
  // A unit, or a bare 0 ("font:0/0 a", the image-replacement shorthand).
  const m = /(?:^|\s)((?:\d+(?:\.\d+)?|\.\d+)(?:px|pt|em|rem|%)|0)(?:\/|\s|$)/.exec(font.slice(0, 200));
  return m?.[1];
}

function ownEmphasis(name: string, style: ReadonlyMap<string, string>, fontPx: number, parentPx: number): 0 | 1 | 2 {
  if (fontPx >= BIG_FONT_PX && fontPx > parentPx) return 2;
  const spacing = style.get("letter-spacing");
  if (spacing !== undefined && Number.parseFloat(spacing) > 0) return 2;
  const family = style.get("font-family");
  if (family !== undefined && /mono|courier|consolas|menlo/.test(family)) return 2;
  const tag = EMPHASIS_BY_TAG.get(name);
  if (tag !== undefined) return tag;
  const weight = style.get("font-weight");
  if (weight === "bold" || weight === "bolder" || Number.parseInt(weight ?? "0", 10) >= 600) return 1;
  return 0;
}

/** An opacity as a number ("0.3", "30%"). */
function fraction(value: string): number {
  const v = Number.parseFloat(value);
  return value.trim().endsWith("%") ? v / 100 : v;
}

/** Text or a background fainter than this is not there. */
const MIN_ALPHA = 0.1;
const NAMED_COLOURS = new Map<string, Rgb & { a: number }>([
  ["white", { r: 255, g: 255, b: 255, a: 1 }],
  ["black", { r: 0, g: 0, b: 0, a: 1 }],
  ["transparent", { r: 0, g: 0, b: 0, a: 0 }],
]);

/** The first colour in a value ("#fff", "white", "rgb(…)", "rgba(…, 0)", "url(x) #0b5fff"), with its opacity. */
function colour(value: string | undefined): (Rgb & { a: number }) | null {
  if (!value) return null;
  const v = value.slice(0, 200).toLowerCase();
  const hex = /#([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})\b/.exec(v);
  const hsl = /hsla?\(\s*(-?[\d.]+)(?:deg)?\s*[,\s]\s*([\d.]+)%\s*[,\s]\s*([\d.]+)%(?:\s*[,/]\s*(\d*\.?\d+)(%?))?/.exec(v);
  const rgb = /rgba?\(\s*(\d{1,3})\s*[,\s]\s*(\d{1,3})\s*[,\s]\s*(\d{1,3})(?:\s*[,/]\s*(\d*\.?\d+)(%?))?/.exec(v);
  const named = /\b(white|black|transparent)\b/.exec(v);
  // The earliest colour in the value is the one that applies (a gradient's first stop is close enough).
  const found = [hex, rgb, hsl, named].filter((m): m is RegExpExecArray => m !== null).sort((a, b) => a.index - b.index)[0];
  if (!found) return null;
  if (found === named) return NAMED_COLOURS.get(found[1]!) ?? null;
  if (found === hsl) {
    const alpha = found[4] === undefined ? 1 : Number(found[4]) / (found[5] === "%" ? 100 : 1);
    return { ...hslToRgb(Number(found[1]), Number(found[2]) / 100, Number(found[3]) / 100), a: alpha };
  }
  if (found === rgb) {
    const [r, g, b] = [found[1], found[2], found[3]].map((c) => Math.min(255, Number(c))) as [number, number, number];
    const alpha = found[4] === undefined ? 1 : Number(found[4]) / (found[5] === "%" ? 100 : 1);
    return { r, g, b, a: alpha };
  }
  const h = found[1]!;
  // #rgb and #rgba written short; #rrggbbaa's last pair is the opacity.
  const full = h.length <= 4 ? [...h].map((c) => c + c).join("") : h;
  const alpha = full.length === 8 ? Number.parseInt(full.slice(6, 8), 16) / 255 : 1;
  return { r: Number.parseInt(full.slice(0, 2), 16), g: Number.parseInt(full.slice(2, 4), 16), b: Number.parseInt(full.slice(4, 6), 16), a: alpha };
}

/** An HSL colour (hue in degrees, saturation and lightness from 0 to 1) as RGB. */
function hslToRgb(hue: number, saturation: number, lightness: number): Rgb {
  const s = Math.min(1, Math.max(0, saturation));
  const l = Math.min(1, Math.max(0, lightness));
  const k = (n: number) => (n + (((hue % 360) + 360) % 360) / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const channel = (n: number) => Math.round(255 * (l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1))));
  return { r: channel(0), g: channel(8), b: channel(4) };
}

/** The text of a piece of markup (a comment's, a template's), tags taken out: one forward pass. */
function textOfMarkup(html: string, start: number, end: number): string {
  const out: string[] = [];
  let i = start;
  while (i < end) {
    const lt = html.indexOf("<", i);
    const stop = lt < 0 || lt >= end ? end : lt;
    if (stop > i) out.push(html.slice(i, stop));
    if (stop >= end) break;
    out.push(" ");
    const gt = html.indexOf(">", stop + 1);
    i = gt < 0 || gt >= end ? end : gt + 1;
  }
  return out.join("");
}

function isPixel(attributes: ReadonlyMap<string, string>): boolean {
  const style = declarations(attributes.get("style") ?? "");
  const size = (v: string | undefined) => (v === undefined ? Number.NaN : Number.parseFloat(v));
  const width = size(attributes.get("width") ?? style.get("width"));
  const height = size(attributes.get("height") ?? style.get("height"));
  return width <= 2 || height <= 2 || hidesElement(style) !== null;
}

interface Rule {
  readonly selector: string;
  readonly body: string;
  /** Inside a @media block (it applies on some screens only). */
  readonly media: boolean;
}

/**
 * The key a simple selector is known by: ".class", "#id" or "[attribute]" (an attribute selector, whatever value
 * it asks for) after an optional element name, or "<name>" for an element's name alone; null for anything more
 * (descendants, pseudo-classes).
 */
function selectorKey(selector: string): string | null {
  const m = /^\s*([a-z][a-z0-9]*)?(?:([.#][\w-]+)|\[\s*([\w-]+)\s*(?:[~|^$*]?=\s*(?:"[^"]*"|'[^']*'|[\w-]+)\s*)?\])?\s*$/i.exec(selector);
  if (!m || (!m[1] && !m[2] && !m[3])) return null;
  if (m[2]) return m[2].toLowerCase();
  if (m[3]) return `[${m[3].toLowerCase()}]`;
  // An element's name alone ("font{display:none}"), not the page's own elements.
  const name = m[1]!.toLowerCase();
  return name === "body" || name === "html" ? null : `<${name}>`;
}

/** Whether declarations show an element that another rule hides (display other than none, visibility visible). */
function showsElement(style: ReadonlyMap<string, string>): boolean {
  const display = style.get("display");
  return (display !== undefined && display !== "none") || style.get("visibility") === "visible";
}

/**
 * The rules of a style sheet at the top level and directly inside a @media block (those apply on some screens
 * only; other at-rules' rules are left out).
 */
function sheetRules(css: string): Rule[] {
  const rules: Rule[] = [];
  // Open blocks: at-rules and anything nested in a rule count as "at"; a depth-one rule is top level, a depth-two
  // rule inside @media is a media rule.
  let depth = 0;
  let inRule = false;
  let inMedia = false;
  let preludeStart = 0;
  let selector = "";
  let bodyStart = 0;
  for (let i = 0; i < css.length; i++) {
    const c = css.charCodeAt(i);
    if (c === 0x2f /* / */ && css.charCodeAt(i + 1) === 0x2a /* * */) {
      const end = css.indexOf("*/", i + 2);
      i = end < 0 ? css.length : end + 1;
    } else if (c === 0x7b /* { */) {
      const prelude = css.slice(preludeStart, i).trim();
      depth++;
      // A screen's @media block (not print's: a page shown only when printed is hidden on screen).
      if (depth === 1 && /^@media\b(?!\s+(?:only\s+)?print\b)/i.test(prelude)) inMedia = true;
      const ruleDepth = inMedia ? 2 : 1;
      if (depth === ruleDepth && !prelude.startsWith("@")) {
        inRule = true;
        selector = prelude;
        bodyStart = i + 1;
      }
      preludeStart = i + 1;
    } else if (c === 0x7d /* } */) {
      if (depth === (inMedia ? 2 : 1) && inRule) rules.push({ selector, body: css.slice(bodyStart, i), media: inMedia });
      if (depth === (inMedia ? 2 : 1)) inRule = false;
      if (depth === 1) inMedia = false;
      if (depth > 0) depth--;
      preludeStart = i + 1;
    } else if (c === 0x3b /* ; */ && !inRule) {
      preludeStart = i + 1;
    }
  }
  return rules;
}
