// Extraction from an inbound message: its own reply text, its one-time codes and its links, and a reading of it
// that is safe to hand to a model (safety.ts: safeText, warnings, risk). Pure and bounded (see limits.ts): no I/O,
// linear in the capped input, safe on hostile HTML. Computed once when a message is stored.
//
// Which part is read for what: the reply text comes from the sender's text part when there is one (it is what
// they wrote), else from the rendered HTML; codes and links come from the HTML when there is one (it says what is
// hidden, quoted and prominent, and where the anchors are), else from the text.
import { findCodes, type ScanLine } from "./codes.js";
import { docFromText, isBlank, unquoted, type Doc, type Line } from "./document.js";
import { docFromHtml } from "./html.js";
import { MAX_LINK_CANDIDATES, MAX_SUBJECT_CHARS } from "./limits.js";
import { bareUrls, classifyLinks, type FoundLink } from "./links.js";
import { findHistory, replyTextOf, type History } from "./reply.js";
import { readSafely } from "./safety.js";
import type { Extracted, ExtractionInput } from "./types.js";

export type {
  Extracted,
  ExtractedCode,
  ExtractedLink,
  ExtractionInput,
  LinkKind,
  Risk,
  SafetyWarning,
  SenderAuthentication,
  WarningCode,
  WarningPart,
} from "./types.js";

export function extractMessage(input: ExtractionInput): Extracted {
  const subject = (input.subject ?? "").slice(0, MAX_SUBJECT_CHARS).replace(/\s+/g, " ");
  const text = input.text?.trim() ? docFromText(input.text) : null;
  const rendered = input.html?.trim() ? docFromHtml(input.html) : null;
  const html = rendered && (rendered.anchors.length > 0 || rendered.lines.some((l) => !isBlank(l))) ? rendered : null;

  // Each part's history is found once: the reply text and the scope of codes and links read the same part.
  const histories = new Map<Doc, History | null>();
  const historyOf = (doc: Doc) => {
    if (!histories.has(doc)) histories.set(doc, findHistory(doc.lines, subject));
    return histories.get(doc)!;
  };
  const replySource = text ?? html;
  const replyText = replySource ? replyTextOf(replySource.lines, subject, historyOf(replySource)) : "";

  const primary = html ?? text;
  const safe = readSafely({ input, html: rendered, primary: html ? "html" : text ? "text" : null });
  if (!primary) return { replyText, codes: [], links: [], ...safe };
  const scope = ownScope(primary, historyOf(primary));
  let codes = findCodes(scanLines(primary, scope, primary === text), subject);
  // An HTML part that shows its code as an image (or not at all) may still have it in the text part.
  if (codes.length === 0 && primary === html && text) {
    codes = findCodes(scanLines(text, ownScope(text, historyOf(text)), true), subject);
  }
  const links = classifyLinks(foundLinks(primary, scope, primary === text), subject, input.from ?? null);
  return { replyText, codes, links, ...safe };
}

/**
 * Which lines are the sender's own, or a message they forward: not a reply's quoted history, and not the quotes
 * an interleaved reply answers.
 */
function ownScope(doc: Doc, history: History | null): boolean[] {
  return doc.lines.map((line, i) => (history && i >= history.from && i < history.to ? history.forwarded : !line.quoted));
}

function scanLines(doc: Doc, scope: readonly boolean[], isText: boolean): ScanLine[] {
  const out: ScanLine[] = [];
  doc.lines.forEach((line, i) => {
    if (scope[i]) out.push(isText ? { text: unquoted(line.text), emphasis: line.emphasis } : line);
  });
  return out;
}

function foundLinks(doc: Doc, scope: readonly boolean[], isText: boolean): FoundLink[] {
  const found: { link: FoundLink; line: number }[] = [];
  const previous = previousContent(doc.lines);
  // The words around a link: the line before it and its own line near it, each from a bounded window, so a line
  // of 20,000 URLs costs each of them a window rather than a copy of the line.
  const contextOf = (i: number, text: string, at: number, length: number) => {
    const before = previous[i]! >= 0 ? doc.lines[previous[i]!]!.text.slice(-CONTEXT_WINDOW) : "";
    const own = `${text.slice(Math.max(0, at - CONTEXT_WINDOW), at)} ${text.slice(at + length, at + length + CONTEXT_WINDOW)}`;
    return `${before} ${own}`;
  };
  for (const anchor of doc.anchors) {
    if (scope[anchor.line] ?? scope[anchor.line - 1] ?? true) {
      const text = doc.lines[anchor.line]?.text ?? "";
      const context = contextOf(anchor.line, text, anchor.column, anchor.text.length);
      found.push({ link: { href: anchor.href, text: anchor.text, context }, line: anchor.line });
    }
  }
  for (let i = 0; i < doc.lines.length && found.length < MAX_LINK_CANDIDATES; i++) {
    const line = doc.lines[i]!;
    if (!scope[i] || !line.text.includes("://")) continue;
    const text = isText ? unquoted(line.text) : line.text;
    for (const { url, index } of bareUrls(text, MAX_LINK_CANDIDATES - found.length)) {
      found.push({ link: { href: url, text: "", context: contextOf(i, text, index, url.length) }, line: i });
    }
  }
  // Document order; an anchor before a bare URL on the same line (a button, then its "or paste this link").
  return found.sort((a, b) => a.line - b.line).map((f) => f.link);
}

/** Characters of context taken on each side of a link, and from the end of the line before it. */
const CONTEXT_WINDOW = 300;

/** For each line, the index of the last non-blank line before it (-1 when none): one pass. */
function previousContent(lines: readonly Line[]): number[] {
  const out: number[] = [];
  let last = -1;
  for (let i = 0; i < lines.length; i++) {
    out.push(last);
    if (!isBlank(lines[i]!)) last = i;
  }
  return out;
}
