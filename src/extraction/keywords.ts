// Words that say a number nearby is a one-time code, and words that say it is something else (an order, an
// invoice, a phone number …), in English, German, French, Spanish and a few more. Matched per word, so no
// regular expression runs over a whole line.
import { trimChars } from "./document.js";

export interface Hit {
  readonly start: number;
  readonly end: number;
  /** 0–1: how strongly the word points at a one-time code (or, for a decoy, away from one). */
  readonly strength: number;
}

export interface Hits {
  readonly code: readonly Hit[];
  readonly decoy: readonly Hit[];
}

/** Words that name a one-time code themselves. */
const CODE_WORDS = table({
  code: 1, codes: 1, otp: 1, passcode: 1, passcodes: 1, pin: 0.9, tan: 0.8, mtan: 1, pushtan: 1, smstan: 1, "2fa": 0.8,
  mfa: 0.7,
  código: 1, codigo: 1, códigos: 1, codice: 1, kod: 1, kode: 1, koodi: 1, код: 1, kodu: 1, clave: 0.7,
  verification: 0.8, verify: 0.6, verifying: 0.6, authentication: 0.6, authenticate: 0.5, "two-factor": 0.7,
  "one-time": 0.8, confirmation: 0.5, confirm: 0.4, login: 0.5, "log-in": 0.5, "sign-in": 0.5, signin: 0.5,
  security: 0.5, token: 0.5, password: 0.4, passwort: 0.4, kennwort: 0.4, contraseña: 0.4, senha: 0.4,
  verifizierung: 0.8, bestätigung: 0.5, bestätigen: 0.4, anmeldung: 0.5, anmelden: 0.4, einmalpasswort: 1, einmalkennwort: 1,
  vérification: 0.8, verification_code: 1, vérifier: 0.5, connexion: 0.5, sécurité: 0.5, authentification: 0.6,
  verificación: 0.8, verificar: 0.5, seguridad: 0.5, acceso: 0.4, verifica: 0.7, verificação: 0.8, verificatie: 0.8,
  verifiering: 0.8, weryfikacyjny: 0.9, подтверждения: 0.8,
  验证码: 1, 認証コード: 1, 確認コード: 1, 인증번호: 1,
});
/** Two-word phrases that name a code ("one time", "sign in", "log in", "mot de passe"). */
const CODE_PHRASES = table({
  "one time": 0.8, "sign in": 0.5, "log in": 0.5, "two factor": 0.7, "usage unique": 0.9, "un solo": 0.6, "solo uso": 0.8,
  "mot de": 0.3, "single use": 0.8,
});
/** Words before "code" that make it something else ("promo code", "zip code", "QR code"). */
const NOT_A_CODE_BEFORE = new Set([
  "promo", "promotional", "promotion", "discount", "coupon", "voucher", "gift", "referral", "invite", "invitation", "zip",
  "postal", "post", "area", "country", "qr", "bar", "error", "status", "source", "tracking", "dress", "product", "sort",
  "swift", "bic", "tax", "vat", "booking", "reservation", "airline", "approval", "authorization", "authorisation",
  "flight", "offer", "sale", "rabatt",
  "gutschein", "aktions", "postleitzahl", "promotionnel", "réduction", "descuento", "postal", "cupón", "promocional",
]);
/** Words after "code" (or after its "de"/"di") that make it something else ("code promo", "código de descuento"). */
const NOT_A_CODE_AFTER = new Set([
  "promo", "postal", "réduction", "reduction", "descuento", "promocional", "promoción", "sconto", "qr", "barras", "reduc",
]);
/** Compounds ending in a code word whose first part makes them something else (German "Rabattcode"). */
const NOT_A_CODE_PREFIX = [
  "rabatt", "gutschein", "aktions", "promo", "postleit", "bar", "qr", "fehler", "status", "quell", "tracking", "buchungs",
  "reservierungs", "farb", "länder", "vorwahl",
];
/** Words ending in "code" that are not one-time codes. */
const NOT_A_CODE_WORDS = new Set([
  "unicode", "encode", "decode", "opcode", "barcode", "qrcode", "postcode", "zipcode", "promocode", "shortcode", "geocode",
  "transcode", "pseudocode", "sourcecode", "bytecode", "hexcode", "colorcode", "colourcode", "dresscode", "barcodes",
]);
/** Word endings of compounds that name a code ("Bestätigungscode", "Sicherheitscode", "verificatiecode"). */
const CODE_SUFFIXES = ["code", "kod", "kode", "koodi", "passwort", "kennwort", "-pin", "-tan"];

/** Words that name what a number is when it is not a code. */
const DECOY_WORDS = table({
  order: 1, orders: 1, bestellung: 1, bestellnummer: 1, auftrag: 1, auftragsnummer: 1, commande: 1, pedido: 1, ordine: 1,
  invoice: 1, rechnung: 1, rechnungsnummer: 1, facture: 1, factura: 1, fattura: 1, receipt: 1, quittung: 1, beleg: 0.8,
  reçu: 1, recibo: 1, ticket: 1, case: 0.8, incident: 0.8, request: 0.4, tracking: 1, sendungsnummer: 1, sendung: 0.8,
  sendungsverfolgung: 1, suivi: 1, seguimiento: 1, shipment: 1, parcel: 1, package: 0.6, paket: 1, colis: 1, envío: 0.8,
  reference: 1, referenz: 1, référence: 1, referencia: 1, ref: 1, customer: 0.8, kunde: 0.8, kundennummer: 1, client: 0.6,
  cliente: 0.6, member: 0.6, membership: 0.8, transaction: 1, transaktion: 1, transacción: 1, total: 1, subtotal: 1,
  amount: 1, betrag: 1, montant: 1, importe: 1, price: 1, preis: 1, prix: 1, precio: 1, sku: 1, item: 0.8, artikel: 0.8,
  qty: 1, quantity: 1, menge: 1, phone: 1, tel: 1, telephone: 1, telefon: 1, téléphone: 1, teléfono: 1, fax: 1, mobile: 0.8,
  mobil: 0.8, call: 0.8, anrufen: 1, appelez: 1, llame: 1, llámanos: 1, whatsapp: 1, hotline: 1, zip: 1, postal: 1,
  postcode: 1, plz: 1, flight: 1, flug: 1, vol: 0.8, vuelo: 1, booking: 1, buchung: 1, réservation: 1, reserva: 1,
  reservation: 1, itinerary: 1, seat: 0.8, gate: 0.8, room: 0.8, suite: 0.8, floor: 0.6, street: 1, st: 0.6, ave: 0.8,
  avenue: 1, road: 0.8, straße: 1, strasse: 1, str: 0.8, rue: 1, calle: 1, account: 0.5, konto: 0.6, iban: 1, meeting: 0.8,
  id: 0.5, serial: 1, model: 0.8, version: 1, vat: 1, ust: 1, tax: 0.8, number: 0.6, nummer: 0.6, numéro: 0.6,
  número: 0.6, nr: 0.6, "n°": 0.6, "nº": 0.6, rma: 1, claim: 0.8, policy: 0.8, contract: 0.8, vertrag: 0.8, patient: 0.6,
  copyright: 1, unsubscribe: 0.6, promo: 1, discount: 1, coupon: 1, voucher: 1, gutschein: 1, rabatt: 1, rabattcode: 1,
  gutscheincode: 1, zoom: 0.8, webinar: 0.8, conference: 0.6, dial: 1, extension: 0.8, ext: 0.8,
  // Promotions.
  off: 0.8, offer: 0.8, sale: 0.8, checkout: 0.8, deal: 0.6, coupons: 1,
  // Company registers and tax numbers in legal footers.
  registered: 0.8, registration: 0.6, company: 0.6, kvk: 1, hrb: 1, hra: 1, rcs: 1, siren: 1, siret: 1, cif: 1, nif: 1,
  ustid: 1, "ust-idnr": 1, handelsregister: 1, amtsgericht: 1,
});
/** Two-word phrases that name what a number is ("confirmation number", "meeting id", "account number"). */
const DECOY_PHRASES = table({
  "confirmation number": 1, "confirmation no": 1, "booking reference": 1, "account number": 1, "account no": 1,
  "customer number": 1, "member id": 1, "meeting id": 1, "order number": 1, "case number": 1, "ticket number": 1,
  "tracking number": 1, "reference number": 1, "invoice number": 1, "call us": 1, "contact us": 0.6, "zip code": 1,
  "postal code": 1, "code postal": 1, "código postal": 1, "promo code": 1, "discount code": 1, "coupon code": 1,
  "gift card": 1, "card ending": 1, "ending in": 1, "expires on": 0.8, "valid until": 0.8, "gültig bis": 0.8,
});

/** A lookup that knows only its own keys (a plain object would also "know" "constructor"). */
function table(entries: Record<string, number>): ReadonlyMap<string, number> {
  return new Map(Object.entries(entries));
}

const WORD = /[\p{L}\p{M}\p{N}][\p{L}\p{M}\p{N}_'’°-]*/gu;

interface Word {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

/** The code and decoy words of a line, with their positions. */
export function keywordHits(line: string): Hits {
  const words: Word[] = [];
  for (const m of line.matchAll(WORD)) {
    const raw = trimChars(m[0], "'’-", "end");
    words.push({ text: raw.toLowerCase(), start: m.index, end: m.index + raw.length });
  }
  const code: Hit[] = [];
  const decoy: Hit[] = [];
  for (let k = 0; k < words.length; k++) {
    const w = words[k]!;
    const before = words[k - 1]?.text ?? "";
    let after = words[k + 1]?.text ?? "";
    if (after === "de" || after === "di" || after === "do") after = words[k + 2]?.text ?? "";
    const pair = k + 1 < words.length ? `${w.text} ${words[k + 1]!.text}` : "";
    const phraseEnd = words[k + 1]?.end ?? w.end;
    const decoyPhrase = DECOY_PHRASES.get(pair);
    if (decoyPhrase !== undefined) decoy.push({ start: w.start, end: phraseEnd, strength: decoyPhrase });
    const codePhrase = CODE_PHRASES.get(pair);
    if (codePhrase !== undefined) code.push({ start: w.start, end: phraseEnd, strength: codePhrase });
    const decoyWord = DECOY_WORDS.get(w.text);
    if (decoyWord !== undefined) {
      decoy.push({ start: w.start, end: w.end, strength: decoyWord });
      continue;
    }
    const codeStrength = codeWordStrength(w.text);
    if (codeStrength === 0) continue;
    // What kind of code it is, the words just before say: "booking reference (confirmation code)".
    const qualified = words.slice(Math.max(0, k - 3), k).some((b) => (DECOY_WORDS.get(b.text) ?? 0) >= 0.8);
    if (codeStrength < 0 || qualified || NOT_A_CODE_BEFORE.has(before) || NOT_A_CODE_AFTER.has(after)) {
      decoy.push({ start: w.start, end: w.end, strength: 1 });
    } else {
      code.push({ start: w.start, end: w.end, strength: codeStrength });
    }
  }
  // Scripts without spaces between words (Chinese, Japanese, Korean) name codes inside longer runs.
  for (const cjk of CJK_CODE_WORDS) {
    const at = line.indexOf(cjk);
    if (at >= 0) code.push({ start: at, end: at + cjk.length, strength: 1 });
  }
  return { code, decoy };
}

const CJK_CODE_WORDS = ["验证码", "認証コード", "確認コード", "인증번호", "ワンタイム"];
/** First words of the phrases that name a code. */
const CODE_PHRASE_FIRST_WORDS = new Set([...CODE_PHRASES.keys()].map((phrase) => phrase.split(" ")[0]!));

/** The code words, the phrases' first words, the compounds' endings and the CJK words: a word that names a code has one. */
const CODE_WORD_PIECES = [...new Set([...CODE_WORDS.keys(), ...CODE_PHRASE_FIRST_WORDS, ...CODE_SUFFIXES, ...CJK_CODE_WORDS])]
  // A piece that holds another is found by it ("passcode" by "code").
  .filter((piece, _, all) => !all.some((other) => other !== piece && piece.includes(other)));

/**
 * The pieces as one search, their common beginnings taken out ("co(?:d(?:e|i(?:go|ce))|n(?:firm|…))…"): it finds
 * the same strings as a list of them all, but tries one branch per code unit instead of each piece in turn.
 */
const CODE_WORD_PIECE = new RegExp(alternationTree(CODE_WORD_PIECES), "g");
const ASCII = /^[\x00-\x7f]*$/;
// The ASCII reading in mayNameCode relies on it: a piece of letters and digits lies within one word.
if (CODE_WORD_PIECES.some((piece) => ASCII.test(piece) && !/^[a-z0-9]+$/.test(piece))) throw new Error("an ASCII code-word piece has more than letters and digits");

/**
 * Whether a line has a word that can name a code: keywordHits finds code words only among these, and only among
 * the words of a line that masks some of these, so a line without one has no code hits. No neighbours, no decoys.
 */
export function mayNameCode(line: string): boolean {
  const lower = line.toLowerCase();
  CODE_WORD_PIECE.lastIndex = 0;
  let piece = CODE_WORD_PIECE.exec(lower);
  // Each such word has a piece in it: a line that has none, lower-cased, has none.
  if (piece === null) return false;
  if (!ASCII.test(line)) return anyWordNamesCode(line);
  // ASCII lower-cases code unit for code unit, and its pieces are letters and digits: each piece lies in one word
  // at the same place in the line, and only the words with a piece in them need reading.
  do {
    let start = piece.index;
    while (start > 0 && ASCII_WORD_UNIT[line.charCodeAt(start - 1)] === 1) start--;
    let end = piece.index + piece[0].length;
    while (end < line.length && ASCII_WORD_UNIT[line.charCodeAt(end)] === 1) end++;
    // WORD's word begins at the run's first letter or digit.
    while (!isAsciiAlphanumeric(line.charCodeAt(start))) start++;
    if (namesCode(trimChars(lower.slice(start, end), "'-", "end"))) return true;
    CODE_WORD_PIECE.lastIndex = end;
    piece = CODE_WORD_PIECE.exec(lower);
  } while (piece !== null);
  return false;
}

/** mayNameCode read word by word, for any text: whether one of its words (or a CJK word in it) names a code. */
export function anyWordNamesCode(line: string): boolean {
  for (const m of line.matchAll(WORD)) {
    if (namesCode(trimChars(m[0], "'’-", "end").toLowerCase())) return true;
  }
  return CJK_CODE_WORDS.some((cjk) => line.includes(cjk));
}

function namesCode(word: string): boolean {
  return CODE_PHRASE_FIRST_WORDS.has(word) || codeWordStrength(word) > 0;
}

/** The code units of WORD's words in ASCII ([\p{L}\p{M}\p{N}_'’°-] there is [A-Za-z0-9_'-]). */
const ASCII_WORD_UNIT = Uint8Array.from({ length: 128 }, (_, unit) => (/[A-Za-z0-9_'-]/.test(String.fromCharCode(unit)) ? 1 : 0));

function isAsciiAlphanumeric(unit: number): boolean {
  return (unit >= 48 && unit <= 57) || (unit >= 65 && unit <= 90) || (unit >= 97 && unit <= 122);
}

/** An alternation of `strings` as a tree of their common beginnings, escaped for a regular expression. */
function alternationTree(strings: readonly string[]): string {
  const byFirst = new Map<string, string[]>();
  let endsHere = false;
  for (const s of strings) {
    if (s.length === 0) endsHere = true;
    else byFirst.set(s[0]!, [...(byFirst.get(s[0]!) ?? []), s.slice(1)]);
  }
  const branches = [...byFirst].map(([first, rests]) => first.replace(/[.*+?^${}()|[\]\\\-/]/g, "\\$&") + alternationTree(rests));
  if (branches.length === 0) return "";
  if (branches.length === 1 && !endsHere) return branches[0]!;
  return `(?:${branches.join("|")})${endsHere ? "?" : ""}`;
}

/** How strongly a word names a code; -1 for a word that names another kind of code ("Rabattcode", "barcode"). */
function codeWordStrength(word: string): number {
  const direct = CODE_WORDS.get(word);
  if (direct !== undefined) return direct;
  if (NOT_A_CODE_WORDS.has(word)) return -1;
  // German, Dutch and Nordic compounds: "Bestätigungscode", "Sicherheitscode", "Einmalpasswort", "verificatiecode".
  if (word.length > 6 && CODE_SUFFIXES.some((s) => word.endsWith(s))) {
    return NOT_A_CODE_PREFIX.some((p) => word.startsWith(p)) ? -1 : 1;
  }
  return 0;
}
