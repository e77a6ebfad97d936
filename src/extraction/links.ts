// Links a reader can follow: visible anchors and bare http(s) URLs, parsed by the WHATWG URL parser (no
// javascript:, data: or relative URLs), each URL once, in document order. Unsubscribe links are marked; the one
// link most likely to verify an address, sign in or reset a password is marked with that kind, when the link
// itself says so (its text, its URL's words, a one-time token in it) and so does the message (its subject, the
// line before the link, or that token).
import { MAX_LINK_CANDIDATES, MAX_LINKS, MAX_URL_CHARS } from "./limits.js";
import type { ExtractedLink, LinkKind } from "./types.js";

/** A link as found: an anchor or a bare URL, with the text around it. */
export interface FoundLink {
  readonly href: string;
  /** The anchor's visible text; "" for a bare URL. */
  readonly text: string;
  /** The line the link is on and the non-blank line before it, without the link's own text. */
  readonly context: string;
}

type Action = "verification" | "sign_in" | "password_reset";

const ACTION_WORDS: Record<Action, readonly string[]> = {
  verification: [
    "verify", "verification", "confirm", "activate", "activation", "validate", "bestätigen", "bestätige", "verifizieren",
    "aktivieren", "vérifier", "confirmer", "activer", "valider", "verificar", "confirmar", "activar", "validar", "verifica",
    "conferma", "bevestig", "verifiëren", "verifique", "confirme",
  ],
  sign_in: [
    "sign in", "signin", "sign-in", "log in", "login", "log-in", "magic link", "anmelden", "einloggen", "se connecter",
    "connexion", "iniciar sesión", "inicia sesión", "iniciar sesion", "acceder", "accedi", "inloggen", "entrar",
  ],
  password_reset: [
    "reset password", "reset your password", "password reset", "new password", "change password", "change your password",
    "passwort zurücksetzen", "neues passwort", "kennwort zurücksetzen", "réinitialiser", "nouveau mot de passe",
    "restablecer", "nueva contraseña", "recuperar contraseña", "reimposta", "wachtwoord",
  ],
};
/** Words of a URL's path and query that name an action. */
const ACTION_URL_WORDS: Record<Action, readonly string[]> = {
  verification: [
    "verify", "verification", "confirm", "confirmation", "activate", "activation", "validate", "validation",
    "verifyemail", "confirmemail",
  ],
  sign_in: ["login", "signin", "sign-in", "sign_in", "magic", "magiclink", "magic-link", "auth", "sso", "passwordless", "otp", "session"],
  password_reset: ["reset", "password", "pwreset", "recover", "recovery", "forgot", "reset-password", "reset_password", "resetpassword"],
};
/** Priority when a link matches several actions: a reset link also says "password" and "login". */
const ACTION_ORDER: readonly Action[] = ["password_reset", "verification", "sign_in"];

const UNSUBSCRIBE = new RegExp(
  [
    "unsubscribe", "abmelden", "abbestellen", "désabonner", "d[ée]sinscri", "darse de baja", "dar de baja",
    "cancelar (?:la )?suscripci", "opt[- ]?out", "e-?mail preferences", "e-mail-einstellungen",
    "manage (?:your )?(?:email )?preferences", "disiscriviti", "afmelden", "uitschrijven",
  ].join("|"),
  "i",
);
/** Links that are never the action, whatever words they carry. */
const NOT_ACTION = new RegExp(
  [
    "privacy", "terms", "datenschutz", "impressum", "confidentialit", "privacidad", "help", "support", "hilfe", "aide",
    "ayuda", "faq", "contact", "kontakt", "legal", "policy", "blog", "careers", "download",
    "view (?:this )?(?:email |message )?in (?:your )?browser", "web version", "im browser", "version en ligne",
    "ver en (?:el )?navegador", "app store", "google play", "didn.t request", "not you", "wasn.t me", "report",
    "secure your account", "review (?:your )?(?:recent )?activity", "learn more", "mehr erfahren", "en savoir plus",
    "más información",
  ].join("|"),
  "i",
);
const SOCIAL_HOSTS = /(^|\.)(twitter|x|facebook|linkedin|instagram|youtube|tiktok|pinterest|apps\.apple|play\.google|itunes\.apple)\.com$/;
/** From this score on a link is the message's action link. */
const ACTION_THRESHOLD = 3;

/** Parses an href the way a browser would, keeping only absolute http(s) URLs of bounded length. */
export function parseHttpUrl(href: string): URL | null {
  const raw = href.trim();
  if (raw.length > MAX_URL_CHARS || !/^https?:\/\//i.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null; // Not a URL a browser would open.
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname) return null;
  if (url.href.length > MAX_URL_CHARS) return null;
  return url;
}

/**
 * Bare URLs in a line of text, without the punctuation that ends a sentence around them, with where each starts;
 * at most `limit` (the scan stops there, however many more the line holds).
 */
export function bareUrls(line: string, limit: number): { url: string; index: number }[] {
  const out: { url: string; index: number }[] = [];
  if (limit <= 0) return out;
  for (const m of line.matchAll(/https?:\/\/[^\s<>"'`\u00a0]+/gi)) {
    out.push({ url: withoutTrailingPunctuation(m[0]), index: m.index });
    if (out.length >= limit) break;
  }
  return out;
}

const TRAILING = new Set([".", ",", ";", ":", "!", "?", "*", ">", "}", "'", '"']);

/** Cuts sentence punctuation off a URL's end; a closing bracket stays when the URL opened one ("…/Foo_(bar)"). */
function withoutTrailingPunctuation(url: string): string {
  let end = url.length;
  const hasOpen = { ")": url.includes("("), "]": url.includes("[") };
  while (end > 0) {
    const c = url[end - 1]!;
    if (TRAILING.has(c) || ((c === ")" || c === "]") && !hasOpen[c])) end--;
    else break;
  }
  return url.slice(0, end);
}

interface Entry {
  readonly url: URL;
  text: string;
  readonly texts: string[];
  readonly contexts: string[];
}

/** The distinct links in document order, unsubscribe links and the one action link marked. */
export function classifyLinks(found: readonly FoundLink[], subject: string, from: string | null): ExtractedLink[] {
  const entries = new Map<string, Entry>();
  for (const link of found.slice(0, MAX_LINK_CANDIDATES)) {
    const url = parseHttpUrl(link.href);
    if (!url) continue;
    const seen = entries.get(url.href);
    if (seen) {
      if (!seen.text && link.text) seen.text = link.text;
      seen.texts.push(link.text);
      seen.contexts.push(link.context);
    } else if (entries.size < MAX_LINKS) {
      entries.set(url.href, { url, text: link.text, texts: [link.text], contexts: [link.context] });
    }
  }
  const senderDomain = registrable(from?.split("@").pop()?.toLowerCase() ?? "");
  const subjectAction = actionIn(subject.toLowerCase());
  let bestIndex = -1;
  let bestScore = -Infinity;
  let bestAction: Action = "verification";
  const list = [...entries.values()];
  const kinds: LinkKind[] = list.map((entry, index) => {
    const texts = entry.texts.join(" ").toLowerCase();
    if (UNSUBSCRIBE.test(texts) || UNSUBSCRIBE.test(entry.url.pathname + entry.url.search)) return "unsubscribe";
    const scored = actionScore(entry, texts, subjectAction, senderDomain);
    if (scored && scored.score >= ACTION_THRESHOLD && scored.score > bestScore) {
      bestScore = scored.score;
      bestIndex = index;
      bestAction = scored.action;
    }
    return "other";
  });
  return list.map((entry, index) => ({
    url: entry.url.href,
    text: entry.text,
    domain: entry.url.hostname.toLowerCase(),
    kind: index === bestIndex ? bestAction : kinds[index]!,
  }));
}

function actionScore(
  entry: Entry,
  texts: string,
  subjectAction: Action | null,
  senderDomain: string,
): { action: Action; score: number } | null {
  const url = entry.url;
  if (SOCIAL_HOSTS.test(url.hostname) || NOT_ACTION.test(texts)) return null;
  const urlWords = new Set(
    decodeSafely(url.pathname + " " + url.search)
      .toLowerCase()
      .split(/[^a-z0-9_-]+/)
      .flatMap((w) => [w, ...w.split(/[-_]/)]),
  );
  if (/privacy|terms|help|support|faq|legal|unsubscribe/.test(url.pathname.toLowerCase())) return null;
  const context = entry.contexts.join(" ").toLowerCase();
  // Magic and verification links carry a long random token.
  const token = hasToken(url);
  // "Confirm your order", "confirm attendance": confirming is not always an address or an account.
  const notAccount =
    /\b(order|bestellung|commande|pedido|booking|reservation|attendance|rsvp|appointment|termin|subscription)\b/.test(texts);
  let top: { action: Action; score: number } | null = null;
  for (const action of ACTION_ORDER) {
    const inText = mentionsAny(texts, ACTION_WORDS[action]);
    const inUrl = ACTION_URL_WORDS[action].some((w) => urlWords.has(w));
    const inContext = mentionsAny(context, ACTION_WORDS[action]);
    const inSubject = subjectAction === action;
    // The link itself must say so (its text, its URL's words, a one-time token), and so must the message (its
    // subject, the words around the link, or that token): a link's own words alone are also a newsletter's
    // "Log in" in its header, and the words around a link alone are also its settings page's.
    if (!(inText || inUrl || token) || !(token || inContext || inSubject)) continue;
    let score = (inText ? 3 : 0) + (inUrl ? 2 : 0) + (inContext ? 2 : 0) + (inSubject ? 1 : 0) + (token ? 1 : 0);
    if (senderDomain && registrable(url.hostname) === senderDomain) score += 0.5;
    if (notAccount) score -= 3;
    if (!top || score > top.score) top = { action, score };
  }
  return top;
}

function actionIn(text: string): Action | null {
  for (const action of ACTION_ORDER) if (mentionsAny(text, ACTION_WORDS[action])) return action;
  return null;
}

/** Whether `text` has one of `phrases` as whole words ("sign in", not the "sign in" of "design in"). */
function mentionsAny(text: string, phrases: readonly string[]): boolean {
  return phrases.some((phrase) => {
    for (let at = text.indexOf(phrase); at >= 0; at = text.indexOf(phrase, at + 1)) {
      if (!isLetter(text[at - 1]) && !isLetter(text[at + phrase.length])) return true;
    }
    return false;
  });
}

function isLetter(c: string | undefined): boolean {
  return c !== undefined && /\p{L}/u.test(c);
}

function hasToken(url: URL): boolean {
  const parts = [...url.pathname.split("/"), ...[...url.searchParams.values()]];
  return parts.some((p) => p.length >= 16 && p.length <= 1_000 && /^[A-Za-z0-9_\-.~=%]+$/.test(p) && /[0-9]/.test(p) && /[A-Za-z]/.test(p));
}

function decodeSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // Malformed escapes: the raw text still carries the words.
  }
}

/** The last two labels of a host name (three under a two-letter second level like co.uk): close enough here. */
function registrable(host: string): string {
  const labels = host.split(".").filter(Boolean);
  if (labels.length <= 2) return labels.join(".");
  const take = labels[labels.length - 2]!.length <= 3 && labels[labels.length - 1]!.length === 2 ? 3 : 2;
  return labels.slice(-take).join(".");
}
