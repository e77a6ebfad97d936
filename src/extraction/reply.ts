// Where a message's own text ends: the quoted history a reply carries (Gmail's "On … wrote:", Apple Mail's "On …
// at …, … wrote:", Outlook's "-----Original Message-----" and From/Sent/To/Subject header blocks, ">" lines, the
// HTML quote containers the renderer marked), a forwarded message, and a trailing signature ("-- ", "Sent from
// my iPhone", a sign-off followed by nothing but a name and contact lines). Rules read one bounded line at a time.
import { isBlank, trimChars, unquoted, type Line } from "./document.js";
import { MAX_MARKER_LINE } from "./limits.js";

export interface History {
  /** The first line of the history. */
  readonly from: number;
  /**
   * Just past its last line: the end of the text, except for a reply written under the quote it answers
   * (bottom-posting), whose own text follows.
   */
  readonly to: number;
  /** A forwarded message (its content is the payload), rather than a reply's quoted history. */
  readonly forwarded: boolean;
}

/** "wrote:" in the languages of the attribution lines clients write above a quote. */
const WROTE = [
  "wrote", "writes", "schrieb", "a écrit", "escribió", "ha scritto", "escreveu", "schreef", "skrev", "kirjoitti",
  "napisał", "napisała", "napisal", "написал", "написала", "yazdı", "έγραψε", "写道", "wrote the following",
  "quoting", "zitat von", "citando",
];
/** Openers of Gmail/Apple attribution lines: "On …", "Am …", "Le …", "El …", "Il giorno …", "Em …", "Op …", "Den …". */
const ATTRIBUTION_OPENERS = /^(on|am|le|el|il|em|op|den|dne|w dniu|el día|le \d|den \d)\b/;

/** Separators a client writes above the quoted or forwarded message (dashes and spaces around them ignored). */
const REPLY_SEPARATORS = new Set([
  "original message", "ursprüngliche nachricht", "originalnachricht", "message d'origine", "message d’origine",
  "mensaje original", "messaggio originale", "mensagem original", "oorspronkelijk bericht", "originalmeddelande",
  "alkuperäinen viesti", "wiadomość oryginalna", "исходное сообщение", "original-nachricht",
]);
const FORWARD_SEPARATORS = new Set([
  "forwarded message", "weitergeleitete nachricht", "message transféré", "mensaje reenviado", "messaggio inoltrato",
  "mensagem encaminhada", "doorgestuurd bericht", "vidarebefordrat meddelande", "forwarded message follows",
  "begin forwarded message", "anfang der weitergeleiteten nachricht", "début du message réexpédié",
  "début du message transféré", "inicio del mensaje reenviado", "inizio messaggio inoltrato",
  "início da mensagem reencaminhada", "begin doorgestuurd bericht", "пересылаемое сообщение",
]);

/** Header labels of the block Outlook (and others) write above a quoted or forwarded message. */
const FROM_LABELS = new Set(["from", "von", "de", "da", "van", "från", "fra", "od", "от", "lähettäjä", "kimden", "expéditeur"]);
const DATE_LABELS = new Set([
  "sent", "date", "gesendet", "datum", "envoyé", "enviado", "enviado el", "fecha", "inviato", "data", "verzonden",
  "skickat", "sendt", "wysłano", "отправлено", "lähetetty", "tarih", "envoyé le",
]);
const TO_LABELS = new Set(["to", "an", "à", "a", "para", "aan", "till", "til", "do", "кому", "vastaanottaja", "kime"]);
const SUBJECT_LABELS = new Set([
  "subject", "betreff", "objet", "asunto", "oggetto", "assunto", "onderwerp", "ämne", "emne", "temat", "тема", "aihe", "konu",
]);

/** Subject prefixes of a forward: Fwd, FW, WG (German), TR (French), RV and ENC (Spanish, Portuguese), Doorst (Dutch). */
const FORWARD_SUBJECT = /^\s*(?:\[[^\]]{0,40}\]\s*)?(?:fwd?|wg|tr|rv|enc|doorst|vs|vb)\s*:/i;

/** Where the history is, or null when the whole text is the message's own. */
export function findHistory(lines: readonly Line[], subject: string): History | null {
  const forwardedBySubject = FORWARD_SUBJECT.test(subject);
  const marked = lines.map((line) => MARKER_CHARS.test(line.text));
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (isBlank(line) || line.text.length > MAX_MARKER_LINE) continue;
    // Separators, header labels and attributions all need one of these characters, on the line or (an attribution
    // wrapped over lines) on one of the two after it: most lines are not read further.
    if (!marked[i] && !marked[i + 1] && !marked[i + 2]) continue;
    const marker = markerAt(lines, i);
    if (marker === "forward") return { from: i, to: lines.length, forwarded: true };
    if (marker === "attribution" && quotesFollow(lines, i)) return quoteHistory(lines, i);
    if (marker !== null) return { from: backOverRule(lines, i), to: lines.length, forwarded: forwardedBySubject };
  }
  return quoteHistory(lines, null);
}

/**
 * Characters that separators ("---- Forwarded message ----", "*Original Message*"), "Label:" lines and
 * attributions ("… wrote:") cannot do without.
 */
const MARKER_CHARS = /[-_=*:\uff1a]/;

/** What a line begins: a forwarded message, a reply's separator or header block, or an attribution ("… wrote:"). */
type Marker = "forward" | "separator" | "attribution" | null;

function markerAt(lines: readonly Line[], i: number): Marker {
  const text = normalise(unquoted(lines[i]!.text));
  const bare = trimChars(trimChars(text, ":", "end"), "-_=*");
  if (FORWARD_SEPARATORS.has(bare) && (text !== bare || text.endsWith(":"))) return "forward";
  if (REPLY_SEPARATORS.has(bare) && text !== bare) return "separator";
  if (headerLabel(text, FROM_LABELS) && headerBlockFollows(lines, i)) return "separator";
  if (isAttribution(lines, i)) return "attribution";
  return null;
}

function normalise(text: string): string {
  return trimChars(text.replace(/[\s\u00a0]+/g, " ").toLowerCase(), "*");
}

/** The label of a "Label: value" line when it is one of `labels` ("De :" and "*From:*" included). */
function headerLabel(text: string, labels: ReadonlySet<string>): boolean {
  const colon = text.indexOf(":");
  if (colon <= 0 || colon > 24) return false;
  return labels.has(text.slice(0, colon).replace(/\*/g, "").trim());
}

/** A From line begins a header block when Sent/Date, To or Subject lines follow within a few lines. */
function headerBlockFollows(lines: readonly Line[], from: number): boolean {
  let found = 0;
  for (let k = from + 1; k < Math.min(lines.length, from + 8); k++) {
    if (lines[k]!.text.length > MAX_MARKER_LINE) continue;
    const text = normalise(unquoted(lines[k]!.text));
    if (headerLabel(text, DATE_LABELS) || headerLabel(text, SUBJECT_LABELS) || headerLabel(text, TO_LABELS)) found++;
  }
  return found >= 2;
}

/**
 * An attribution ("On Mon, 8 Jan 2024 at 09:14, Ana <ana@example.org> wrote:"), which clients wrap over up to
 * three lines: a short line ending in ":" with a "wrote" verb and a date, a time or an address in it.
 */
function isAttribution(lines: readonly Line[], i: number): boolean {
  let joined = "";
  for (let k = i; k < Math.min(lines.length, i + 3); k++) {
    const text = unquoted(lines[k]!.text).trim();
    if (!text || text.length > MAX_MARKER_LINE) return false;
    joined = joined ? `${joined} ${text}` : text;
    if (text.endsWith(":") || text.endsWith("：")) {
      // A wrapped attribution starts with its opener ("On …"); otherwise a sentence above would join it.
      return (k === i || ATTRIBUTION_OPENERS.test(normalise(lines[i]!.text))) && looksLikeAttribution(normalise(joined));
    }
  }
  return false;
}

function looksLikeAttribution(text: string): boolean {
  if (text.length > MAX_MARKER_LINE * 2) return false;
  if (!/\d|@/.test(text)) return false;
  const verb = WROTE.some((w) => text.includes(` ${w}`) || text.startsWith(w));
  // "On … wrote:" and its translations; other forms ("Ana <ana@…> wrote:") need the address.
  return verb && (ATTRIBUTION_OPENERS.test(text) || text.includes("@") || /\d{1,2}:\d{2}/.test(text));
}

/** Whether quoted lines come next after an attribution (not so in clients that quote without ">"). */
function quotesFollow(lines: readonly Line[], attribution: number): boolean {
  if (lines[attribution]!.quoted) return true;
  let k = attribution + 1;
  while (k < lines.length && isBlank(lines[k]!)) k++;
  return k < lines.length && lines[k]!.quoted;
}

/** Steps back over a rule line ("____", "-----") and blank lines just above a header block. */
function backOverRule(lines: readonly Line[], i: number): number {
  let k = i - 1;
  while (k >= 0 && isBlank(lines[k]!)) k--;
  if (k >= 0 && /^[\s_\-=—]{8,}$/.test(lines[k]!.text)) return k;
  return i;
}

/**
 * The history among quoted lines, given the attribution above them if any. A quote with nothing of the sender's
 * after it is history from its attribution on; a single quote answered below (bottom-posting) is history up to
 * the answer; quotes with answers between them (an interleaved reply) stay as the answers' context, and only a
 * quote after the last answer goes.
 */
function quoteHistory(lines: readonly Line[], attribution: number | null): History | null {
  const blocks: { start: number; end: number; answered: boolean }[] = [];
  for (let i = attribution ?? 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (isBlank(line)) continue;
    const last = blocks[blocks.length - 1];
    if (line.quoted || i === attribution) {
      if (last && !last.answered) last.end = i + 1;
      else blocks.push({ start: i, end: i + 1, answered: false });
    } else if (last && !line.signature) {
      last.answered = true;
    }
  }
  if (blocks.length === 0) return null;
  const answered = blocks.filter((b) => b.answered).length;
  if (answered === 0) return { from: blocks[0]!.start, to: lines.length, forwarded: false };
  if (blocks.length === 1) return { from: blocks[0]!.start, to: blocks[0]!.end, forwarded: false };
  const last = blocks[blocks.length - 1]!;
  return last.answered ? null : { from: last.start, to: lines.length, forwarded: false };
}

/** Sign-offs that end a message when only a name and contact lines follow them. */
const SIGN_OFFS = new Set([
  "thanks", "thank you", "thanks again", "many thanks", "thanks a lot", "thanks so much", "thank you so much", "thx",
  "cheers", "best", "all best", "all the best", "best regards", "kind regards", "warm regards", "warmest regards",
  "regards", "best wishes", "sincerely", "yours sincerely", "sincerely yours", "yours truly", "yours", "cordially",
  "talk soon", "take care", "greetings", "respectfully", "with thanks", "rgds", "br",
  "mit freundlichen grüßen", "mit freundlichen grüssen", "freundliche grüße", "freundliche grüsse", "viele grüße",
  "viele grüsse", "beste grüße", "beste grüsse", "liebe grüße", "liebe grüsse", "herzliche grüße", "herzliche grüsse",
  "schöne grüße", "grüße", "gruß", "mfg", "lg", "vg", "danke", "vielen dank", "danke und grüße",
  "cordialement", "bien cordialement", "très cordialement", "bien à vous", "merci", "merci beaucoup", "merci d'avance",
  "bonne journée", "salutations", "sincères salutations", "amitiés", "bises", "belle journée",
  "saludos", "un saludo", "saludos cordiales", "atentamente", "gracias", "muchas gracias", "un abrazo", "cordialmente",
  "cordiali saluti", "saluti", "distinti saluti", "grazie", "atenciosamente", "obrigado", "obrigada", "abraços",
  "met vriendelijke groet", "vriendelijke groet", "groeten", "met groet", "mvg", "bedankt",
]);
/** Lines mobile and web clients append on their own. */
const CLIENT_SIGNATURE = new RegExp(
  "^(?:" +
    [
      "sent from my ", "sent from (?:outlook|mail|yahoo|gmail|samsung)", "sent with proton", "sent via ", "get outlook for ",
      "von meinem .{1,40} gesendet", "gesendet von ", "envoyé de mon ", "envoyé depuis ", "enviado desde ", "inviato da ",
      "verzonden vanaf ", "verstuurd vanaf ", "skickat från ", "wysłane z ",
    ].join("|") +
    ")",
  "i",
);
const MAX_SIGNATURE_LINES = 8;
const MAX_SIGNATURE_LINE = 80;

/** The first line of a trailing signature among lines[0, end), or `end` when there is none. */
export function findSignature(lines: readonly Line[], end: number): number {
  const content: number[] = [];
  for (let i = 0; i < end; i++) if (!isBlank(lines[i]!)) content.push(i);
  if (content.length < 2) return end;
  const first = content[0]!;
  // The last line of the sender's own (not in a marked signature): a marked line after it starts the signature.
  let lastOwn = -1;
  for (const i of content) if (!lines[i]!.signature) lastOwn = i;
  // "-- " (RFC 3676) and the HTML signature containers clients mark: everything after is signature.
  for (const i of content) {
    if (i === first) continue;
    const text = lines[i]!.text;
    if (text === "--" || text === "-- " || text === "—" || (lines[i]!.signature && i > lastOwn)) {
      return withSignOffAbove(lines, content, i);
    }
  }
  // A client line or a sign-off among the last few lines, with only short lines after it.
  const tail = content.slice(-MAX_SIGNATURE_LINES - 1);
  for (const [at, i] of tail.entries()) {
    if (i === first) continue;
    const text = lines[i]!.text.trim();
    const after = tail.slice(at + 1);
    if (CLIENT_SIGNATURE.test(text) && after.length <= 3) return withSignOffAbove(lines, content, i);
    if (isSignOff(text) && after.every((k) => isContactLine(lines[k]!.text))) return i;
  }
  return end;
}

/** A sign-off (and the name under it) just above a signature belongs to it: "Thanks,\nAna\n-- \n…". */
function withSignOffAbove(lines: readonly Line[], content: readonly number[], signature: number): number {
  const at = content.indexOf(signature);
  for (let back = 1; back <= 2 && at - back > 0; back++) {
    const k = content[at - back]!;
    if (isSignOff(lines[k]!.text.trim())) return k;
    if (!isContactLine(lines[k]!.text) || lines[k]!.text.trim().length > 40) break;
  }
  return signature;
}

function isSignOff(text: string): boolean {
  if (text.length > 60) return false;
  const plain = text.toLowerCase().replace(/[,.!;:\s—–-]+$/, "").trim();
  if (SIGN_OFFS.has(plain)) return true;
  // "Thanks, Ana" / "Best – J." / "Cheers Bob": a sign-off, then a name (capitalised words or initials).
  const m = /^([^\d,–—-]{2,40}?)\s*[,–—-]?\s+(\S+(?:\s\S+){0,2})$/.exec(text.replace(/[,.!;:\s]+$/, ""));
  return m !== null && SIGN_OFFS.has(m[1]!.trim().toLowerCase()) && m[2]!.split(" ").every((w) => /^\p{Lu}[\p{L}.'-]*$/u.test(w));
}

/** A name, a title, a company, a phone number or an address: short, and not a sentence or a question. */
function isContactLine(text: string): boolean {
  const t = text.trim();
  return t.length <= MAX_SIGNATURE_LINE && !t.endsWith("?") && !/[.!]\s+\p{Lu}/u.test(t);
}

/** The new text: lines outside the history and above the signature, without trailing blanks or runs of blank lines. */
export function replyTextOf(lines: readonly Line[], subject: string, history = findHistory(lines, subject)): string {
  const own = history ? [...lines.slice(0, history.from), ...lines.slice(history.to)] : lines;
  const end = findSignature(own, own.length);
  const out: string[] = [];
  for (let i = 0; i < end; i++) {
    const text = own[i]!.text.trimEnd();
    if (text === "" && (out.length === 0 || out[out.length - 1] === "")) continue;
    out.push(text);
  }
  while (out.length > 0 && out[out.length - 1] === "") out.pop();
  return out.join("\n");
}
