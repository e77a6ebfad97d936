// One-time codes: number and letter groups near words that name a code ("code", "OTP", "Bestätigungscode",
// "código"…), favoured when they stand alone on a line, are shown big, or repeat the subject; refused when they
// are part of a larger number (dates, times, prices, phone numbers, long tracking numbers), when a closer word
// names them as something else (an order, an invoice, a phone…), or when they sit in an address or a footer.
import { trimChars, type Emphasis } from "./document.js";
import { keywordHits, mayNameCode, type Hit, type Hits } from "./keywords.js";
import { MAX_CODE_CANDIDATES_PER_LINE, MAX_CODE_SCAN_CHARS, MAX_CODE_SCAN_LINE, MAX_CODES, MAX_KEYWORD_HITS_PER_LINE } from "./limits.js";
import type { ExtractedCode } from "./types.js";

export interface ScanLine {
  readonly text: string;
  readonly emphasis: readonly Emphasis[];
}

interface Candidate {
  /** The code as typed: digit groups joined, letter codes as shown. */
  readonly value: string;
  readonly start: number;
  readonly end: number;
  readonly shape: Shape;
  /** Digit group sizes, for numbers shown in groups. */
  readonly groups: readonly number[];
}

type Shape = "digits" | "grouped-digits" | "alphanumeric" | "grouped-letters" | "lower-alphanumeric";

interface Scored {
  readonly value: string;
  readonly score: number;
  readonly context: string;
  readonly order: number;
  /** Found more than once (a code shown twice, or in the subject and the body). */
  readonly repeated: boolean;
}

/** Below this a candidate is not reported. */
const THRESHOLD = 4;
/** Weight of the code-word proximity (0–1) in a score. */
const KEYWORD_WEIGHT = 6;
/** How much a code word on a nearby line counts, by line distance (non-blank lines; 0 = the same line). */
const ABOVE = [1, 0.8, 0.65, 0.5];
const BELOW = [1, 0.5, 0.35];

/** The one-time codes among lines of the sender's own text (and of a forwarded message), most likely first. */
export function findCodes(source: readonly ScanLine[], subject: string): ExtractedCode[] {
  const texts = bounded(source);
  const subjectText = subject.slice(0, MAX_CODE_SCAN_LINE);
  // A message without a word that can name a code has none: the cheap answer for most mail, before any masking.
  if (!mayNameCode(subjectText) && !texts.some((l) => mayNameCode(l.text))) return [];
  const lines = texts.map(prepared);
  const subjectLine = prepare(subjectText);
  const subjectHits = boundedHits(keywordHits(subjectLine));
  const hits = lines.map((l) => boundedHits(keywordHits(l.masked)));
  // A message that names no code anywhere has none: the cheap answer for most mail.
  if (subjectHits.code.length === 0 && hits.every((h) => h.code.length === 0)) return [];

  // Codes the subject presents as codes ("482913 is your code"); a body line repeating one is all but certain.
  const subjectValues = new Set(
    candidates(subjectLine)
      .filter((c) => !refused(subjectLine, c) && nearness([subjectHits], 0, c).code >= 0.3)
      .map((c) => c.value),
  );
  // "Your Acme sign-in code" over a body that only says "Enter 482913": the subject names what the body holds.
  const subjectStrength = Math.max(0, ...subjectHits.code.map((h) => h.strength));
  const subjectNamesCode = subjectStrength >= 0.8;
  const found = new Map<string, Scored>();
  const add = (s: Scored) => {
    const seen = found.get(s.value);
    if (!seen) found.set(s.value, s);
    else found.set(s.value, { ...(s.score > seen.score ? s : seen), order: seen.order, repeated: true });
  };

  lines.forEach((line, index) => {
    for (const c of candidates(line.masked)) {
      if (refused(line.masked, c)) continue;
      const near = nearness(hits, index, c, subjectNamesCode ? subjectStrength / 2 : 0);
      if (c.shape === "lower-alphanumeric" && near.code < 0.9) continue;
      let score = KEYWORD_WEIGHT * near.code + features(line, c);
      if (near.decoy > 0) score -= (near.decoy >= near.code * 0.9 ? KEYWORD_WEIGHT : KEYWORD_WEIGHT / 2) * near.decoy;
      if (subjectValues.has(c.value)) score += 2;
      if (subjectNamesCode) score += 1;
      if (near.code < 0.3 && !subjectValues.has(c.value)) continue;
      if (score >= THRESHOLD) add({ value: c.value, score, context: contextOf(line, c), order: index, repeated: false });
    }
  });
  // "123456 is your verification code": a subject that names the code is enough on its own.
  for (const c of candidates(subjectLine)) {
    if (refused(subjectLine, c) || found.has(c.value)) continue;
    const near = nearness([subjectHits], 0, c);
    const score = KEYWORD_WEIGHT * near.code + shapeScore(c) - KEYWORD_WEIGHT * near.decoy;
    if (near.code >= 0.5 && score >= THRESHOLD) add({ value: c.value, score, context: contextOf({ text: subject }, c), order: -1, repeated: false });
  }
  const ranked = [...found.values()].map((s) => ({ ...s, score: s.score + (s.repeated ? 0.5 : 0) }));
  return ranked
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, MAX_CODES)
    .map((s) => ({ value: s.value, confidence: confidence(s.score), context: s.context }));
}

interface Prepared extends ScanLine {
  /** The text with URLs and addresses blanked out (same length, so positions hold). */
  readonly masked: string;
  /** The masked text without surrounding blanks and a closing full stop: a code alone on its line equals it. */
  readonly alone: string;
  /** Whether the line reads as an address or a legal footer; read once per line, not once per candidate. */
  readonly footer: boolean;
  /** The text with its whitespace collapsed, made when a code on the line first needs it as context. */
  flat?: string;
}

/**
 * A line's keyword hits, at most MAX_KEYWORD_HITS_PER_LINE of each kind: every candidate is compared with every
 * hit of its own and nearby lines, so the caps keep a line of thousands of "code 123456" linear.
 */
function boundedHits(hits: Hits): Hits {
  if (hits.code.length <= MAX_KEYWORD_HITS_PER_LINE && hits.decoy.length <= MAX_KEYWORD_HITS_PER_LINE) return hits;
  return { code: hits.code.slice(0, MAX_KEYWORD_HITS_PER_LINE), decoy: hits.decoy.slice(0, MAX_KEYWORD_HITS_PER_LINE) };
}

/** The lines scanned: non-blank ones, each and all cut to their bounds. */
function bounded(source: readonly ScanLine[]): ScanLine[] {
  const out: ScanLine[] = [];
  let budget = MAX_CODE_SCAN_CHARS;
  for (const line of source) {
    if (budget <= 0) break;
    if (!line.text.trim()) continue;
    const text = line.text.slice(0, Math.min(MAX_CODE_SCAN_LINE, budget));
    budget -= text.length;
    out.push({ text, emphasis: line.emphasis });
  }
  return out;
}

function prepared({ text, emphasis }: ScanLine): Prepared {
  const masked = prepare(text);
  return { text, emphasis, masked, alone: trimChars(masked, ".:!", "end").trim(), footer: FOOTER.test(text) };
}

/** Blanks out URLs, host names and e-mail addresses: their digits are never codes. */
function prepare(text: string): string {
  return text.replace(/\S+/g, (word) => (isAddress(word) ? " ".repeat(word.length) : word));
}

function isAddress(word: string): boolean {
  if (word.includes("://") || /^\W{0,2}(?:www\.|mailto:)/i.test(word)) return true;
  const at = word.indexOf("@");
  if (at >= 0 && word.indexOf(".", at) > at) return true;
  // "example.com/c/482913": a host name with a path.
  const slash = word.indexOf("/");
  const host = trimChars(slash > 0 ? word.slice(0, slash) : word, ".,;:!?)", "end");
  const dot = host.lastIndexOf(".");
  return dot > 0 && HOST_ENDINGS.has(host.slice(dot + 1).toLowerCase()) && /^\W{0,2}[\w.-]+$/.test(host.slice(0, dot));
}

const HOST_ENDINGS = new Set(["com", "net", "org", "io", "de", "fr", "es", "uk", "co", "app", "dev", "example"]);

const ATOM = /[\p{L}\p{N}]+/gu;
const DIGITS = /^[0-9]+$/;
const UPPER_ALNUM = /^[A-Z0-9]+$/;
const ALNUM = /^[A-Za-z0-9]+$/;
/** Characters that join the groups of one code: a space of any width, or a hyphen. */
const GROUP_SEPARATORS = new Set([" ", "\u00a0", "\u2009", "\u202f", "\u2007", "-", "\u2010", "\u2011", "\u2013"]);

interface Atom {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

/**
 * Digit runs, digit groups ("123 456", "123-456", "1 2 3 4 5 6") and letter codes ("A7K-9QZ", "X7K2PQ"); at most
 * MAX_CODE_CANDIDATES_PER_LINE, from the start of the line.
 */
function candidates(line: string): Candidate[] {
  const atoms: Atom[] = [];
  for (const m of line.matchAll(ATOM)) atoms.push({ text: m[0], start: m.index, end: m.index + m[0].length });
  const out: Candidate[] = [];
  let k = 0;
  while (k < atoms.length && out.length < MAX_CODE_CANDIDATES_PER_LINE) {
    const chain = chainFrom(line, atoms, k);
    const members = atoms.slice(k, k + chain.length);
    k += chain.length;
    if (chain.kind === "digits") out.push(...digitCandidates(line, members));
    else if (chain.kind === "letters") out.push(...letterCandidates(members));
    else out.push(...lowerCandidate(members[0]!));
  }
  return out;
}

interface Chain {
  readonly kind: "digits" | "letters" | "other";
  readonly length: number;
}

/** The longest run of atoms from `k` of one kind joined by one and the same separator character. */
function chainFrom(line: string, atoms: readonly Atom[], k: number): Chain {
  const first = atoms[k]!;
  const kind = DIGITS.test(first.text) ? "digits" : UPPER_ALNUM.test(first.text) ? "letters" : "other";
  if (kind === "other") return { kind, length: 1 };
  let separator: string | null = null;
  let length = 1;
  while (k + length < atoms.length) {
    const previous = atoms[k + length - 1]!;
    const next = atoms[k + length]!;
    const between = line.slice(previous.end, next.start);
    if (between.length !== 1 || !GROUP_SEPARATORS.has(between)) break;
    const isHyphen = between !== " " && !/\s/.test(between);
    if (separator === null) separator = isHyphen ? "-" : " ";
    else if ((separator === "-") !== isHyphen) break;
    // Letter codes are grouped with hyphens only: spaces separate words.
    if (kind === "letters" && !isHyphen) break;
    if (kind === "digits" ? !DIGITS.test(next.text) : !UPPER_ALNUM.test(next.text)) break;
    length++;
  }
  return { kind, length };
}

function digitCandidates(line: string, members: readonly Atom[]): Candidate[] {
  const first = members[0]!;
  // "+49 30 1234567", "(030) 1234567": a phone number, whatever its groups.
  if (/\+\s?$|\(\d{1,5}\)\s?$/.test(line.slice(Math.max(0, first.start - 8), first.start))) return [];
  const last = members[members.length - 1]!;
  const groups = members.map((a) => a.text.length);
  const total = groups.reduce((a, b) => a + b, 0);
  if (members.length === 1) {
    return total >= 4 && total <= 10 ? [{ value: first.text, start: first.start, end: first.end, shape: "digits", groups }] : [];
  }
  const value = members.map((a) => a.text).join("");
  const spaced = groups.every((g) => g === 1) && members.length >= 4 && members.length <= 8;
  const grouped = groups.every((g) => g >= 2 && g <= 5) && members.length <= 4;
  if (total >= 4 && total <= 10 && (spaced || grouped)) {
    return [{ value, start: first.start, end: last.end, shape: "grouped-digits", groups }];
  }
  // A longer grouped number (a card, a tracking or an account number) is none; a long run inside it may be.
  if (groups.every((g) => g === groups[0])) return [];
  return members
    .filter((a) => a.text.length >= 6 && a.text.length <= 10)
    .map((a) => ({ value: a.text, start: a.start, end: a.end, shape: "digits" as const, groups: [a.text.length] }));
}

function letterCandidates(members: readonly Atom[]): Candidate[] {
  const first = members[0]!;
  const last = members[members.length - 1]!;
  const raw = members.map((a) => a.text);
  const total = raw.reduce((a, b) => a + b.length, 0);
  const hasDigit = raw.some((t) => /[0-9]/.test(t));
  const hasLetter = raw.some((t) => /[A-Z]/.test(t));
  if (members.length === 1) {
    const t = first.text;
    if (t.length >= 5 && t.length <= 12 && hasDigit && hasLetter) {
      return [{ value: t, start: first.start, end: first.end, shape: "alphanumeric", groups: [] }];
    }
    return [];
  }
  if (members.length <= 4 && total >= 5 && total <= 16 && raw.every((t) => t.length >= 2 && t.length <= 6) && hasLetter) {
    const shape: Shape = hasDigit ? "alphanumeric" : "grouped-letters";
    return [{ value: raw.join("-"), start: first.start, end: last.end, shape, groups: [] }];
  }
  return [];
}

/** A lower- or mixed-case letter code ("x7k2pq"); reported only right after a code word. */
function lowerCandidate(a: Atom): Candidate[] {
  const t = a.text;
  if (t.length < 5 || t.length > 12 || !ALNUM.test(t) || !/[0-9]/.test(t) || !/[a-z]/i.test(t)) return [];
  return [{ value: t, start: a.start, end: a.end, shape: "lower-alphanumeric", groups: [] }];
}

const MONTHS = new Set([
  "jan", "january", "feb", "february", "mar", "march", "apr", "april", "may", "jun", "june", "jul", "july", "aug",
  "august", "sep", "sept", "september", "oct", "october", "nov", "november", "dec", "december", "januar", "februar",
  "märz", "mai", "juni", "juli", "oktober", "dezember", "janvier", "février", "mars", "avril", "juin", "juillet",
  "août", "septembre", "octobre", "novembre", "décembre", "janv", "févr", "avr", "juil", "déc", "enero", "febrero",
  "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre", "ene", "abr",
  "ago", "dic",
]);
/** Words after a number that make it an amount, a size, a time or a duration. */
const UNITS = new Set([
  "usd", "eur", "gbp", "chf", "jpy", "cad", "aud", "sek", "nok", "dkk", "pln", "inr", "brl", "mxn", "kr", "zł", "dollars",
  "euros", "euro", "pounds", "px", "pt", "kb", "mb", "gb", "tb", "km", "mi", "miles", "kg", "lbs", "lb", "g", "ml", "l",
  "am", "pm", "uhr", "h", "hrs", "hours", "min", "mins", "minutes", "sec", "seconds", "days", "jours", "días", "tage",
  "stunden", "minuten", "minutos", "heures", "points", "punkte", "pts", "items", "artikel", "pcs", "stück", "users",
  "members", "people", "words", "votes", "views", "likes", "followers", "x",
]);
const CURRENCY_BEFORE = new Set(["usd", "eur", "gbp", "chf", "rs", "inr", "us", "r", "cad", "aud", "sek", "kr", "zł"]);
/** Lines of an address or a legal footer: their numbers are zip codes, phone numbers and registry numbers. */
const FOOTER = new RegExp(
  [
    String.raw`©|\(c\)\s*\d|copyright|all rights reserved|alle rechte|tous droits|todos los derechos`,
    String.raw`\b(?:inc|ltd|llc|gmbh|plc|corp|sarl|b\.v|s\.l|s\.a)\b`,
    String.raw`\b(?:street|avenue|road|lane|blvd|suite|floor|rue|avenida|calle|plaza|piazza|viale|rua|postfach)\b`,
    String.raw`\b(?:st|ave|rd|str)\.|(?:stra(?:ß|ss)e|straat|platz|plein|allee|laan|gasse|gracht|weg)\b|p\.?\s?o\.?\s?box`,
  ].join("|"),
  "i",
);

/** Refuses a candidate that is part of something larger: an amount, a date, a time, a phone number, a tag. */
function refused(line: string, c: Candidate): boolean {
  const before = line.slice(Math.max(0, c.start - 2), c.start);
  const after = line.slice(c.end, c.end + 2);
  const prev = before.slice(-1);
  const next = after.slice(0, 1);
  if ("#$€£¥₹+@%&=_\\".includes(prev) && prev !== "") return true;
  // A percentage, an amount, a dial string ("482193#").
  if ("%€$£¥#".includes(next) && next !== "") return true;
  // Next to a masked group ("**** 0130", "DE89 3704 ****"): a piece of a card or account number.
  const maskedBefore = /[*•xX]{3,}\s?$/.test(line.slice(Math.max(0, c.start - 6), c.start));
  if (maskedBefore || /^\s?[*•xX]{3,}/.test(line.slice(c.end, c.end + 6))) return true;
  // 12.05.2024, 10:30, 1,234, 3/4, 2024-05: digits joined by punctuation are one larger number.
  if (/[.,:/\-–]\d/.test(after) || /\d[.,:/\-–]/.test(before)) return true;
  if (/^[-–][A-Za-z0-9]/.test(after) || /[A-Za-z0-9][-–]$/.test(before)) return true;
  const previousWord = /([\p{L}$€£]+)\.?\s{1,2}$/u.exec(line.slice(Math.max(0, c.start - 24), c.start))?.[1]?.toLowerCase() ?? "";
  const nextWord = /^\s{0,2}([\p{L}%]+)/u.exec(line.slice(c.end, c.end + 24))?.[1]?.toLowerCase() ?? "";
  if (UNITS.has(nextWord) || CURRENCY_BEFORE.has(previousWord)) return true;
  if (c.shape === "digits" || c.shape === "grouped-digits") {
    if (MONTHS.has(previousWord) || MONTHS.has(nextWord)) return true;
    // "CA 94105": a US state before a five-digit number.
    if (c.value.length === 5 && /\b[A-Z]{2}\s$/.test(line.slice(Math.max(0, c.start - 4), c.start))) return true;
    if (isDate(c)) return true;
  }
  return false;
}

function isDate(c: Candidate): boolean {
  if (c.shape !== "grouped-digits" || c.groups.length !== 3) return false;
  const [a, b, d] = c.groups as [number, number, number];
  const v = c.value;
  if (a === 4 && b === 2 && d === 2) return /^(19|20)\d\d(0[1-9]|1[0-2])/.test(v);
  if (a === 2 && b === 2 && (d === 4 || d === 2)) return Number(v.slice(0, 2)) <= 31 && Number(v.slice(2, 4)) <= 31;
  return false;
}

interface Nearness {
  /** 0–1: strength × closeness of the nearest code word. */
  readonly code: number;
  /** 0–1: the same for the nearest decoy word. */
  readonly decoy: number;
}

function nearness(hits: readonly Hits[], index: number, c: Candidate, floor = 0): Nearness {
  let code = floor;
  let decoy = 0;
  for (let d = 0; d < ABOVE.length; d++) {
    const h = hits[index - d];
    if (!h) break;
    code = Math.max(code, best(h.code, c, d === 0 ? 0 : -1) * ABOVE[d]!);
    // A decoy names what follows it: a label on the line above, or a word just before on the same line.
    if (d <= 1) decoy = Math.max(decoy, best(h.decoy, c, d === 0 ? 0 : -1, true) * ABOVE[d]!);
  }
  for (let d = 1; d < BELOW.length; d++) {
    const h = hits[index + d];
    if (!h) break;
    code = Math.max(code, best(h.code, c, 1) * BELOW[d]!);
  }
  return { code, decoy };
}

/**
 * The strongest hit's strength × closeness. `where` says where the hits' line is: 0 the candidate's own (closeness
 * by character distance), -1 above it, 1 below it (closeness of a whole line).
 */
function best(hits: readonly Hit[], c: Candidate, where: -1 | 0 | 1, decoy = false): number {
  let top = 0;
  for (const h of hits) {
    let closeness = 1;
    if (where === 0) {
      const after = h.start >= c.end;
      const distance = after ? h.start - c.end : Math.max(0, c.start - h.end);
      closeness = distance <= 2 ? 1 : distance <= 20 ? 0.95 : distance <= 50 ? 0.8 : distance <= 100 ? 0.6 : 0.4;
      // "123456 is your code" reads as well as "code: 123456"; a decoy word after a number rarely names it.
      if (after) closeness *= decoy ? 0.3 : 0.9;
      // A word inside the candidate's own span (the code "PIN1234") is not near it, it is it.
      if (h.start < c.end && h.end > c.start) continue;
    }
    top = Math.max(top, h.strength * closeness);
  }
  return top;
}

function features(line: Prepared, c: Candidate): number {
  let score = shapeScore(c);
  if (line.alone === line.masked.slice(c.start, c.end)) score += 1.5;
  let emphasis = 0;
  for (const e of line.emphasis) if (e.start < c.end && e.end > c.start) emphasis = Math.max(emphasis, e.level);
  score += emphasis === 2 ? 1.5 : emphasis === 1 ? 0.7 : 0;
  if (line.footer) score -= 3;
  if (c.shape === "grouped-digits" && isPhoneShaped(c.groups)) score -= 2;
  return score;
}

function shapeScore(c: Candidate): number {
  const length = c.value.replace(/-/g, "").length;
  switch (c.shape) {
    case "digits":
    case "grouped-digits": {
      // A year on its own is far more often a year than a code.
      if (length === 4 && c.shape === "digits" && /^(19|20)\d\d$/.test(c.value)) return -3;
      return length === 6 ? 1 : length <= 8 ? 0.5 : -0.5;
    }
    case "alphanumeric":
      // SAVE20, WELCOME10: a word and a number is a promotion's code, not a random one-time code.
      return /^[A-Z]{3,}[0-9]{1,4}$|^[0-9]{1,4}[A-Z]{3,}$/.test(c.value) ? -2.5 : 0.5;
    case "grouped-letters":
      return -1;
    case "lower-alphanumeric":
      return -2;
  }
}

/** Groups as phone numbers are written: 3-3-4, 3-4, 2-4-4, 4-3-3, 3-3-3-3 … */
function isPhoneShaped(groups: readonly number[]): boolean {
  const shape = groups.join("-");
  return ["3-3-4", "3-4", "2-4-4", "4-3-3", "3-3-3", "3-3-2-2", "2-2-2-2", "3-2-2", "4-4-2", "3-3-3-3", "4-3-4"].includes(shape);
}

function contextOf(line: { readonly text: string; flat?: string }, c: Candidate): string {
  line.flat ??= line.text.replace(/\s+/g, " ");
  const flat = line.flat;
  if (flat.length <= 120) return flat.trim();
  const from = Math.max(0, Math.min(c.start - 50, flat.length - 120));
  return flat.slice(from, from + 120).trim();
}

function confidence(score: number): number {
  return Math.round((1 - Math.exp(-score / 5)) * 100) / 100;
}
