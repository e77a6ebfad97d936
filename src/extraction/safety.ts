// Reading a message safely: the text a model should be given (safeText), what in the message may try to deceive
// its reader (warnings), and how careful to be (risk). Pure and bounded like the rest of extraction: it reads the
// rendered HTML (html.ts keeps what is hidden, the invisible characters and where links end), the text part, the
// subject, the addresses and what sender authentication found.
//
// What is reported, and what is not (benign mail does all of these):
// - hidden_text: hidden text that says something the visible text does not (at least MIN_NOVEL_WORDS words a
//   reader cannot see anywhere). A preheader (the first hidden text, short, before any visible text but a "View
//   in browser" link, which inboxes show as the preview) is not; a mobile or Outlook-only copy of visible text is not; comments are developer notes in most
//   templates and are not either; nor are screen-reader-only notes ("(opens in a new window)", "external link",
//   skip links: ACCESSIBILITY_NOTES). All hidden text is still searched for instructions.
// - invisible_characters: see invisible.ts (a preheader's zero-width padding and emoji joiners are not reported).
// - link_text_mismatch: a visible link whose text names a domain other than its target's organisation (registrable
//   domain). Not reported: the same organisation (click.acme.com for acme.com, www.; a brand's short, sister or
//   regional domain: organisationOf in domains.ts), link-protection wrappers and open redirectors (unwrapped
//   first: redirects.ts), senders' click trackers that do not show the target (and an authenticated sender's own
//   tracking domain, unless the text names a known brand), and text that names no domain ("Click here", "node.js",
//   "invoice.zip").
// - lookalike_domain: see domains.ts; checked for the From domain, every link's target and every domain named in
//   visible text.
// - instruction_like: see instructions.ts; searched in the subject, the visible text, the hidden text, the text
//   part, and chat-role tags in the markup.
// - sender_unauthenticated, reply_to_diverges: taken from sender authentication when it was evaluated.
import type { Doc } from "./document.js";
import {
  DomainReferences,
  displayHost,
  domainsIn,
  isKnownBrand,
  isPlainAscii,
  organisationOf,
  registrableDomain,
  toAscii,
} from "./domains.js";
import type { HiddenRun, HtmlDoc, LinkEnd } from "./html.js";
import { findInstructions, type InstructionKind } from "./instructions.js";
import { InvisibleText, type InvisibleFinding } from "./invisible.js";
import {
  MAX_DOMAIN_CANDIDATES,
  MAX_EVIDENCE_CHARS,
  MAX_LINK_CANDIDATES,
  MAX_SAFE_TEXT_CHARS,
  MAX_SHOWN_URL,
  MAX_SUBJECT_CHARS,
  MAX_TEXT_CHARS,
  MAX_WARNINGS,
  MAX_WARNINGS_PER_CODE,
} from "./limits.js";
import { bareUrls, parseHttpUrl } from "./links.js";
import { isOpaqueTracker, unwrapRedirect } from "./redirects.js";
import type { ExtractionInput, Risk, SafetyWarning, WarningCode } from "./types.js";

/** Hidden text needs this many words a reader sees nowhere to be worth a warning. */
export const MIN_NOVEL_WORDS = 3;
/** A preheader: the first hidden text, of at most this many characters, before any visible text but links. */
const PREHEADER_MAX_CHARS = 300;
/** Distinct visible words remembered for telling new hidden words from copies. */
const MAX_VISIBLE_WORDS = 50_000;

export interface SafeReading {
  readonly safeText: string;
  readonly warnings: readonly SafetyWarning[];
  readonly risk: Risk;
}

/** What the safety analysis reads: the input, the rendered HTML (even when nothing in it is visible). */
export interface SafetyInput {
  readonly input: ExtractionInput;
  readonly html: HtmlDoc | null;
  /** Which part a reader sees: the HTML when it shows anything, else the text part. */
  readonly primary: "html" | "text" | null;
}

export function readSafely({ input, html, primary }: SafetyInput): SafeReading {
  const warnings = new Warnings();
  const subject = (input.subject ?? "").slice(0, MAX_SUBJECT_CHARS);
  const text = input.text?.trim() ? readText(input.text) : null;
  const htmlShown = primary === "html" && html !== null;

  // Links: the anchors of the HTML, and the bare URLs of whichever part a reader sees.
  const targets = linkTargets(html, htmlShown ? null : text?.doc ?? null);
  const named = namedDomains(htmlShown ? html : null, text && !htmlShown ? text : null);
  const auth = input.authentication;
  const authenticatedFrom = auth?.evaluated && auth.senderAuthenticated ? registrableDomain(domainOf(input.from) ?? "") : null;
  const references = new DomainReferences(
    domainOf(input.from),
    [...targets.map((t) => t.final.hostname), ...named.map((n) => n.domain)],
    authenticatedFrom,
  );

  // Senders.
  if (auth?.evaluated && !auth.senderAuthenticated) {
    warnings.add(finding("sender_unauthenticated", "dmarc", input.from ?? "", "from", null, false));
  }
  if (auth?.evaluated && auth.replyToDiverges) {
    warnings.add(finding("reply_to_diverges", "", input.replyTo ?? "", "reply_to", null, false));
  }

  // Look-alike domains: the sender's, the links', the ones the text names.
  const lookalikes = new Set<string>();
  const fromDomain = domainOf(input.from);
  if (fromDomain) {
    const found = references.lookalike(fromDomain, true, domainOf(input.from, true) ?? fromDomain);
    if (found) {
      lookalikes.add(found.domain);
      warnings.add({ ...finding("lookalike_domain", found.kind, input.from ?? "", "from", null, false), domain: found.domain, imitates: found.imitates });
    }
  }
  for (const target of targets) {
    for (const host of new Set([target.url.hostname, target.final.hostname])) {
      if (lookalikes.has(host)) continue;
      const found = references.lookalike(host);
      if (!found) continue;
      lookalikes.add(found.domain);
      const evidence = `${target.text ? `${target.text} → ` : ""}${shownUrl(target.final)}`;
      warnings.add({ ...finding("lookalike_domain", found.kind, evidence, "link", null, false), domain: found.domain, imitates: found.imitates });
    }
  }
  for (const name of named) {
    const ascii = toAscii(name.domain);
    if (lookalikes.has(ascii)) continue;
    const found = references.lookalike(name.domain, false, name.written);
    if (!found) continue;
    lookalikes.add(found.domain);
    warnings.add({ ...finding("lookalike_domain", found.kind, name.context, name.part, name.offset, false), domain: found.domain, imitates: found.imitates });
  }

  // Links whose text names another domain than the one they lead to.
  for (const target of targets) {
    const mismatch = textDomainMismatch(target, authenticatedFrom, registrableDomain(domainOf(input.from) ?? ""));
    if (mismatch) {
      const evidence = `${target.text} → ${shownUrl(target.final)}`;
      warnings.add({ ...finding("link_text_mismatch", "text_names_other_domain", evidence, "link", null, false), ...mismatch });
    }
  }

  // Hidden text and invisible characters.
  if (html) for (const run of meaningfulHidden(html)) warnings.add(finding("hidden_text", run.how, run.text, "html", run.offset, true));
  const inSubject = invisibleIn(subject);
  const invisible: { part: "html" | "text" | "subject"; findings: readonly InvisibleFinding[] }[] = [
    { part: "subject", findings: inSubject.findings },
    { part: "html", findings: html?.invisible ?? [] },
    { part: "text", findings: text?.invisible ?? [] },
  ];
  for (const { part, findings } of invisible) {
    for (const f of findings) warnings.add(finding("invisible_characters", f.kind, f.evidence, part, f.offset, false));
  }

  // Instructions: the subject, what the HTML shows and hides, the text part.
  instructions(subject, [0], "subject", false, warnings);
  if (inSubject.tagText) instructions(inSubject.tagText, [0], "subject", true, warnings);
  const shownKinds = new Set<InstructionKind>();
  if (html) {
    const shown = joinLines(html);
    for (const k of instructions(shown, html.lineOffsets, "html", false, warnings, undefined, quotedIn(html, shown))) shownKinds.add(k);
    for (const run of html.hidden) instructions({ text: run.text, starts: [0] }, [run.offset], "html", true, warnings);
    // Text spelled in tag characters: invisible to a person, plain ASCII to a model.
    if (html.tagText) instructions(html.tagText, [0], "html", true, warnings);
    for (const tag of html.roleTags) {
      warnings.add(finding("instruction_like", "role_marker", `<${tag.name}>`, "html", tag.offset, true));
    }
  }
  if (text) {
    // The text part of a mail whose HTML is shown is what an agent reading `text` sees and a person does not.
    const hiddenPart = htmlShown;
    instructions(joinLines(text.doc), text.lineOffsets, "text", hiddenPart, warnings, hiddenPart ? shownKinds : undefined);
    if (text.tagText) instructions(text.tagText, [0], "text", true, warnings);
  }

  const list = warnings.list();
  const safeText = htmlShown ? safeHtmlText(html, lookalikes) : text ? safePlainText(text, lookalikes) : "";
  return { safeText, warnings: list, risk: riskOf(list) };
}

/**
 * The risk of a message from its warnings:
 * - high: an instruction a reader does not see (hidden, in a comment or the text part of an HTML mail, a chat-role
 *   tag) or a chat-template role marker anywhere (no mail needs "<|im_start|>"); an instruction together with any other finding but a diverging Reply-To (a disguise, a look-alike or an
 *   unauthenticated sender), or of two kinds ("ignore your instructions" and a role marker); a look-alike sender
 *   domain or link target;
 * - review: any other warning, but a diverging Reply-To alone (ticket systems, forms and lists reply elsewhere);
 * - low: no warning, or only that one.
 * A hidden preheader alone gives no warning at all: inboxes show it as the preview; it is checked for instructions.
 */
export function riskOf(warnings: readonly SafetyWarning[]): Risk {
  const codes = new Set(warnings.map((w) => w.code));
  const instructionKinds = new Set(warnings.filter((w) => w.code === "instruction_like").map((w) => w.detail));
  const otherCodes = [...codes].filter((c) => c !== "instruction_like" && c !== "reply_to_diverges");
  const high =
    warnings.some((w) => w.code === "instruction_like" && (w.hidden || w.detail === "role_marker")) ||
    (instructionKinds.size > 0 && (otherCodes.length > 0 || instructionKinds.size >= 2)) ||
    warnings.some((w) => w.code === "lookalike_domain" && (w.part === "from" || w.part === "link"));
  if (high) return "high";
  return [...codes].some((c) => c !== "reply_to_diverges") ? "review" : "low";
}

class Warnings {
  private readonly items: SafetyWarning[] = [];
  private readonly perCode = new Map<WarningCode, number>();
  private readonly seen = new Set<string>();

  add(w: SafetyWarning): void {
    // Invisible characters once per kind and part: the first occurrence is evidence enough.
    const what = w.code === "invisible_characters" ? w.part : (w.domain ?? w.evidence.toLowerCase());
    const key = `${w.code}|${w.detail}|${w.hidden}|${what}`;
    const count = this.perCode.get(w.code) ?? 0;
    if (this.seen.has(key) || count >= MAX_WARNINGS_PER_CODE || this.items.length >= MAX_WARNINGS) return;
    this.seen.add(key);
    this.perCode.set(w.code, count + 1);
    this.items.push(w);
  }

  /** Most telling first: instructions, look-alikes, mismatches, hidden text, invisible characters, senders. */
  list(): SafetyWarning[] {
    const order: readonly WarningCode[] = [
      "instruction_like", "lookalike_domain", "link_text_mismatch", "hidden_text", "invisible_characters",
      "sender_unauthenticated", "reply_to_diverges",
    ];
    return [...this.items].sort((a, b) => order.indexOf(a.code) - order.indexOf(b.code) || Number(b.hidden) - Number(a.hidden));
  }
}

function finding(
  code: WarningCode,
  detail: string,
  evidence: string,
  part: SafetyWarning["part"],
  offset: number | null,
  hidden: boolean,
): SafetyWarning {
  return { code, detail, evidence: shorten(evidence), part, offset, hidden, domain: null, imitates: null };
}

function shorten(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > MAX_EVIDENCE_CHARS ? `${flat.slice(0, MAX_EVIDENCE_CHARS - 1)}…` : flat;
}

/** The text part, bounded, without invisible characters, as lines with where each starts. */
interface TextPart {
  readonly doc: Doc;
  /** Every code unit of the part (as far as it is read) is ASCII: no line has an invisible character or a look-alike. */
  readonly ascii: boolean;
  readonly lineOffsets: readonly number[];
  readonly invisible: readonly InvisibleFinding[];
  readonly tagText: string;
}

function readText(raw: string): TextPart {
  const scanner = new InvisibleText();
  const bounded = raw.length > MAX_TEXT_CHARS ? raw.slice(0, MAX_TEXT_CHARS) : raw;
  // Measured once for the part, not once for each of its lines.
  const ascii = isPlainAscii(bounded);
  const lines: { text: string; quoted: boolean; signature: boolean; emphasis: [] }[] = [];
  const lineOffsets: number[] = [];
  let start = 0;
  while (start <= bounded.length) {
    let end = bounded.indexOf("\n", start);
    if (end < 0) end = bounded.length;
    const line = scanner.clean(bounded.slice(start, end), start, true, ascii);
    lines.push({ text: (line.endsWith("\r") ? line.slice(0, -1) : line).trimEnd(), quoted: false, signature: false, emphasis: [] });
    lineOffsets.push(start);
    start = end + 1;
  }
  return { doc: { lines, anchors: [] }, ascii, lineOffsets, invisible: scanner.findings(), tagText: scanner.tagText() };
}

function invisibleIn(text: string): { findings: readonly InvisibleFinding[]; tagText: string } {
  if (!text) return { findings: [], tagText: "" };
  const scanner = new InvisibleText();
  scanner.clean(text, 0, true);
  return { findings: scanner.findings(), tagText: scanner.tagText() };
}

/** A link as a reader follows it: its text, its URL, and where it really goes. */
interface LinkTarget {
  readonly text: string;
  readonly url: URL;
  readonly final: URL;
}

/** The HTML's visible anchors, and the bare URLs of a text part a reader sees. */
function linkTargets(html: HtmlDoc | null, text: Doc | null): LinkTarget[] {
  const out: LinkTarget[] = [];
  const add = (href: string, label: string) => {
    const url = parseHttpUrl(href);
    if (url) out.push({ text: label, url, final: unwrapRedirect(url).url });
  };
  for (const anchor of html?.anchors ?? []) add(anchor.href, anchor.text);
  for (const line of text?.lines ?? []) {
    if (out.length >= MAX_LINK_CANDIDATES) break;
    if (line.text.includes("://")) for (const { url } of bareUrls(line.text, MAX_LINK_CANDIDATES - out.length)) add(url, "");
  }
  return out;
}

interface NamedDomain {
  readonly domain: string;
  /** As the text writes it, capitals kept. */
  readonly written: string;
  readonly part: "html" | "text";
  readonly offset: number;
  /** The line it is named on, for the evidence. */
  readonly context: string;
}

/** Domains named in the text a reader sees (not as addresses), with the line they are on. */
function namedDomains(html: HtmlDoc | null, text: TextPart | null): NamedDomain[] {
  const out: NamedDomain[] = [];
  const doc = html ?? text?.doc;
  const offsets = html?.lineOffsets ?? text?.lineOffsets ?? [];
  if (!doc) return out;
  for (let i = 0; i < doc.lines.length && out.length < MAX_DOMAIN_CANDIDATES; i++) {
    const line = doc.lines[i]!.text;
    for (const { domain, written, index } of domainsIn(line, MAX_DOMAIN_CANDIDATES - out.length)) {
      const context = line.slice(Math.max(0, index - 40), index + domain.length + 40);
      out.push({ domain, written, part: html ? "html" : "text", offset: offsets[i] ?? 0, context });
    }
  }
  return out;
}

/**
 * Whether a link's text names a domain of another organisation than its target's, and which: the first domain
 * or URL in the text, compared by registrable domain.
 */
function textDomainMismatch(
  target: LinkTarget,
  authenticatedFrom: string | null,
  from: string | null,
): { domain: string; imitates: string } | null {
  if (!target.text || !target.text.includes(".")) return null;
  const named = namedInLinkText(target.text);
  if (!named) return null;
  const textDomain = registrableDomain(named);
  if (!textDomain) return null;
  // Null for an IP address: text naming a domain over a link to an address is a mismatch.
  const finalDomain = registrableDomain(target.final.hostname);
  if (finalDomain !== null && organisationOf(textDomain) === organisationOf(finalDomain)) return null;
  // A sender's click tracker (which hides where it goes): nothing to compare. So is an authenticated sender's own
  // (a newsletter's "nytimes.com" through email.mg.thedispatch.com), unless the text names a brand. A wrapper that
  // showed its target (Mimecast's "?domain=") was unwrapped: the target is compared.
  if (isOpaqueTracker(finalDomain ?? "", from)) return null;
  if (finalDomain !== null && finalDomain === authenticatedFrom && !isKnownBrand(textDomain)) return null;
  return { domain: target.final.hostname, imitates: toAscii(named) };
}

/**
 * The domain a link's text names: a URL's host, else the first domain name in it — but not a file name under a
 * top-level domain named like a file type ("invoice.zip", "clip.mov") unless it is written as a host ("www.…").
 */
function namedInLinkText(text: string): string | null {
  const [url] = bareUrls(text, 1);
  if (url) return parseHttpUrl(url.url)?.hostname ?? null;
  const [first] = domainsIn(text, 1);
  if (!first) return null;
  const fileLike = FILE_TYPE_SUFFIXES.has(first.domain.slice(first.domain.lastIndexOf(".") + 1)) && !first.domain.startsWith("www.");
  return fileLike ? null : first.domain;
}

/**
 * Top-level domains that read as file types in a link's text ("invoice.zip", "README.md"). Not the country codes
 * that are also extensions (.pl, .py, .sh …): names under them are mostly real sites.
 */
const FILE_TYPE_SUFFIXES = new Set(["zip", "mov", "md"]);

/**
 * Hidden runs a reader should know of: not a preheader, not a comment, not a copy of visible text (fewer than
 * MIN_NOVEL_WORDS words the visible text lacks).
 */
function meaningfulHidden(html: HtmlDoc): HiddenRun[] {
  // Only the first hidden text that is not a comment can be the preheader.
  const first = html.hidden.findIndex((r) => r.how !== "comment" && r.how !== "conditional_comment");
  const candidates = html.hidden.filter(
    (run, index) => run.how !== "comment" && !(index === first && isPreheader(run)) && !isAccessibilityNote(run.text),
  );
  if (candidates.length === 0) return [];
  const visible = visibleWords(html);
  return candidates.filter((run) => {
    let novel = 0;
    for (const word of wordsOf(run.text)) if (!visible.has(word) && ++novel >= MIN_NOVEL_WORDS) return true;
    return false;
  });
}

/**
 * Screen-reader-only notes, hidden from sight on purpose ("(opens in a new window)", "external link", "Skip to
 * main content"), in the languages instructions are read in: a short hidden run that is one such note and nothing
 * else is not reported (it is still searched for instructions).
 */
const ACCESSIBILITY_NOTE = `(?:${[
  "(?:this )?(?:link )?(?:opens|will open|open|opening|launches|will launch|loads)(?: up)?(?: in| into)? (?:a |an )?(?:new|separate|external|another)(?: browser)? (?:window|tab|site|website|page)",
  "(?:in )?(?:a )?new (?:browser )?(?:window|tab)(?: opens)?",
  "(?:link to )?(?:an )?external (?:site|website|page|link)",
  "(?:pdf|download|file|document)(?: file| download)?(?: \\d+ ?[km]b)?",
  "(?:link is )?external(?: link| site| website)?",
  "opens (?:an )?external (?:site|website)",
  "skip to (?:the )?(?:main )?(?:content|navigation|footer)",
  "new (?:window|tab)",
  "(?:link )?(?:öffnet|oeffnet) (?:sich )?in (?:einem )?neuen (?:fenster|tab)",
  "externer link",
  "zum (?:haupt)?inhalt springen",
  "(?:s'ouvre|ouvre) dans (?:une nouvelle (?:fenêtre|fenetre)|un nouvel onglet)",
  "lien externe",
  "aller au contenu(?: principal)?",
  "(?:se )?abre en una (?:nueva )?(?:ventana|pestaña)(?: nueva)?",
  "enlace externo",
  "(?:abre|abre-se) (?:em|numa) (?:uma )?nova (?:janela|aba|guia)",
  "link externo",
  "(?:si )?apre in una nuova (?:finestra|scheda)",
  "link esterno",
  "(?:opent|wordt geopend) in (?:een )?nieuwe? (?:venster|tabblad)",
  "externe link",
  "откроется в новом (?:окне|вкладке)",
  "внешняя ссылка",
  "在新窗口中打开",
  "在新标签页中打开",
  "新しいウィンドウで開きます",
  "新しいタブで開きます",
  "새 창(?:에서|으로) 열림",
].join("|")})`;
/** One note or several in a row ("External link, opens in a new tab"). */
const ACCESSIBILITY_NOTES = new RegExp(`^${ACCESSIBILITY_NOTE}(?: ${ACCESSIBILITY_NOTE}){0,3}$`, "u");
/** Longest hidden run read as an accessibility note. */
const MAX_NOTE_CHARS = 80;

function isAccessibilityNote(text: string): boolean {
  if (text.length > MAX_NOTE_CHARS) return false;
  const note = text.toLowerCase().replace(/[()[\]\-–—,.:;]+/g, " ").replace(/\s+/g, " ").trim();
  return note.length > 0 && ACCESSIBILITY_NOTES.test(note);
}

function isPreheader(run: HiddenRun): boolean {
  return run.visibleBefore === 0 && run.text.length <= PREHEADER_MAX_CHARS;
}

function visibleWords(html: HtmlDoc): Set<string> {
  const words = new Set<string>();
  for (const line of html.lines) {
    for (const word of wordsOf(line.text)) {
      if (words.size >= MAX_VISIBLE_WORDS) return words;
      words.add(word);
    }
  }
  for (const anchor of html.anchors) for (const word of wordsOf(anchor.text)) words.add(word);
  return words;
}

/** Lower-case words of two or more letters or digits. */
function wordsOf(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? []) as string[];
}

/** Lines joined by "\n", with where each starts in the joined text. */
function joinLines(doc: Doc): { text: string; starts: number[] } {
  const starts: number[] = [];
  let at = 0;
  for (const line of doc.lines) {
    starts.push(at);
    at += line.text.length + 1;
  }
  return { text: doc.lines.map((l) => l.text).join("\n"), starts };
}

/**
 * Reports the instruction-like passages of a text. `joined.starts` are where its pieces (lines, or one run) start,
 * `offsets` where those are in their part. `unless`: kinds already reported as shown, not reported again hidden.
 * `quoted`: whether a passage is shown as a quotation or code, whose instructions are quoted, not given.
 */
function instructions(
  joined: string | { text: string; starts: readonly number[] },
  offsets: readonly number[],
  part: SafetyWarning["part"],
  hidden: boolean,
  warnings: Warnings,
  unless?: ReadonlySet<InstructionKind>,
  quoted?: (start: number, end: number) => boolean,
): InstructionKind[] {
  const { text, starts } = typeof joined === "string" ? { text: joined, starts: [0] } : joined;
  if (!text.trim()) return [];
  const kinds: InstructionKind[] = [];
  for (const match of findInstructions(text)) {
    // Shown as a quotation or as code (a digest quoting an attack in <pre><code>): quoted, not given.
    if (quoted?.(match.start, match.end)) continue;
    const piece = pieceAt(starts, match.start);
    kinds.push(match.kind);
    if (unless?.has(match.kind)) continue;
    const from = Math.max(starts[piece]!, match.start - 30);
    const evidence = text.slice(from, Math.max(match.end, Math.min(text.length, from + 100)));
    warnings.add(finding("instruction_like", match.kind, evidence, part, offsets[piece] ?? null, hidden));
  }
  return kinds;
}

/**
 * Whether a passage of the shown HTML's joined lines (`starts`: where each line starts) is quotation or code: every
 * line it touches is, or it lies inside one quoted part of a line (an inline `<code>`). The white space at a
 * passage's ends touches no line: a match that begins at the line break before a `<blockquote>` is quoted too.
 */
function quotedIn(html: HtmlDoc, { text, starts }: { text: string; starts: readonly number[] }): (start: number, end: number) => boolean {
  const spans = html.quotationSpans.map((q) => ({ start: starts[q.line]! + q.start, end: starts[q.line]! + q.end }));
  return (from, to) => {
    let start = from;
    let end = to;
    while (start < end && /\s/.test(text[start]!)) start++;
    while (end > start && /\s/.test(text[end - 1]!)) end--;
    const first = pieceAt(starts, start);
    const last = pieceAt(starts, Math.max(start, end - 1));
    let whole = true;
    for (let line = first; line <= last && whole; line++) whole = html.quotationLines.has(line);
    if (whole) return true;
    // Spans are in document order: the last one starting at or before the passage is the only one that can hold it.
    let lo = 0;
    let hi = spans.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (spans[mid]!.start <= start) lo = mid;
      else hi = mid - 1;
    }
    const span = spans[lo];
    return span !== undefined && span.start <= start && end <= span.end;
  };
}

/** The index of the piece a position falls in (binary search over the pieces' starts). */
function pieceAt(starts: readonly number[], position: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= position) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** An address's domain, lower-case, or as written (`asWritten`). */
function domainOf(address: string | null | undefined, asWritten = false): string | null {
  const at = address?.lastIndexOf("@") ?? -1;
  if (!address || at < 0) return null;
  const domain = address.slice(at + 1).trim().replace(/>$/, "");
  if (!domain.includes(".")) return null;
  return asWritten ? domain : domain.toLowerCase();
}

/** A URL as safe text shows it: its scheme and host whole (xn-- for IDNs), its path as far as it fits. */
function shownUrl(url: URL): string {
  const href = url.href;
  if (href.length <= MAX_SHOWN_URL) return href;
  const origin = `${url.protocol}//${url.host}`;
  return `${href.slice(0, Math.max(origin.length, MAX_SHOWN_URL - 1))}…`;
}

/** An href as safe text shows it: an http(s) URL's real target, a mailto's address, another scheme's name. */
function shownTarget(href: string): string | null {
  const url = parseHttpUrl(href);
  if (url) {
    // A wrapper that names only its target's host: that host, and a mark for the path it does not show.
    const target = unwrapRedirect(url);
    return target.hostOnly ? `${target.url.protocol}//${target.url.host}/…` : shownUrl(target.url);
  }
  const scheme = /^\s*([a-z][a-z0-9+.-]{0,20}):/i.exec(href);
  if (!scheme) return null;
  const name = scheme[1]!.toLowerCase();
  return name === "mailto" || name === "tel" ? href.trim().slice(0, MAX_SHOWN_URL) : `${name}: link`;
}

/** Text with the hosts of its URLs and the domains it names shown as `display` says (look-alikes in xn--). */
function withSafeDomains(text: string, lookalikes: ReadonlySet<string>): string {
  if (!text.includes(".") || isPlainAscii(text)) return text;
  const show = (host: string) => {
    const ascii = toAscii(host.toLowerCase());
    return lookalikes.has(ascii) ? ascii : displayHost(host);
  };
  let out = text;
  if (out.includes("://")) {
    out = out.replace(/(https?:\/\/)([^\s/?#<>"'`]+)/gi, (_m, scheme: string, host: string) => `${scheme}${show(host)}`);
  }
  const names = domainsIn(out, MAX_DOMAIN_CANDIDATES);
  if (names.length === 0) return out;
  const pieces: string[] = [];
  let at = 0;
  for (const { domain, index } of names) {
    pieces.push(out.slice(at, index), show(out.slice(index, index + domain.length)));
    at = index + domain.length;
  }
  pieces.push(out.slice(at));
  return pieces.join("");
}

/** The HTML as a reader sees it, each link followed by its real target. */
function safeHtmlText(html: HtmlDoc, lookalikes: ReadonlySet<string>): string {
  const ends = new Map<number, LinkEnd[]>();
  for (const end of html.linkEnds) {
    if (end.line < 0) continue;
    const onLine = ends.get(end.line);
    if (onLine) onLine.push(end);
    else ends.set(end.line, [end]);
  }
  const out = new BoundedText();
  const alone = (marks: readonly LinkEnd[]) => {
    for (const mark of marks) {
      if (!mark.alone) continue;
      const anchor = html.anchors[mark.anchor]!;
      const target = shownTarget(anchor.href);
      out.line(`${withSafeDomains(anchor.text, lookalikes)}${target ? ` [${target}]` : ""}`);
    }
  };
  html.lines.forEach((line, index) => {
    const all = (ends.get(index) ?? []).sort((a, b) => a.column - b.column);
    alone(all);
    const marks = all.filter((m) => !m.alone);
    let text = "";
    let at = 0;
    for (const mark of marks) {
      const column = Math.min(Math.max(mark.column, at), line.text.length);
      text += withSafeDomains(line.text.slice(at, column), lookalikes);
      at = column;
      const anchor = html.anchors[mark.anchor]!;
      const target = shownTarget(anchor.href);
      const label = mark.imageOnly ? `${text && !text.endsWith(" ") ? " " : ""}${withSafeDomains(anchor.text, lookalikes)}` : "";
      text += target ? `${label} [${target}]` : label;
      // An image's text was never in the line: keep it apart from the word after it.
      if (/^[\p{L}\p{N}]/u.test(line.text.slice(column, column + 1))) text += " ";
    }
    text += withSafeDomains(line.text.slice(at), lookalikes);
    out.line(text);
  });
  alone(ends.get(html.lines.length) ?? []);
  return out.done();
}

function safePlainText({ doc, ascii }: TextPart, lookalikes: ReadonlySet<string>): string {
  const out = new BoundedText();
  // ASCII names no domain in Unicode: withSafeDomains would give each line back as it is.
  for (const line of doc.lines) out.line(ascii ? line.text : withSafeDomains(line.text, lookalikes));
  return out.done();
}

/** Lines joined, runs of blank lines shrunk to one, cut at MAX_SAFE_TEXT_CHARS. */
class BoundedText {
  private readonly pieces: string[] = [];
  private length = 0;
  private blank = true;
  private cut = false;

  line(text: string): void {
    if (this.cut) return;
    const trimmed = text.trimEnd();
    // Without blanks at its end, a line of blanks is empty.
    if (trimmed.length === 0) {
      if (this.blank) return;
      this.blank = true;
    } else {
      this.blank = false;
    }
    const room = MAX_SAFE_TEXT_CHARS - this.length;
    if (trimmed.length + 1 > room) {
      this.pieces.push(`${trimmed.slice(0, Math.max(0, room - 2))}…`);
      this.cut = true;
      return;
    }
    this.pieces.push(trimmed);
    this.length += trimmed.length + 1;
  }

  done(): string {
    return this.pieces.join("\n").trim();
  }
}
