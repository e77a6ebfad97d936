// Domain names a message shows or links to, and which of them imitate another: a brand that phishing mail often
// imitates, the sender's own domain, or another domain of the same message. A look-alike is a name that reads as
// the other one while being a different registrable domain:
//
// - `mixed_script`: a label mixing scripts that are never mixed in a real name (Latin with Cyrillic or Greek …);
//   Japanese, Chinese and Korean mixes with Latin are allowed, as browsers allow them (UTS #39 "highly restrictive");
// - `confusable`: letters of another script or digits that read as the imitated name ("раураl", "paypa1",
//   "rnicrosoft"), and a capital I written for an l ("appIe.com");
// - `typo`: one letter swapped for one that reads alike, two neighbours swapped, a doubled letter added or dropped
//   ("paypall", "docusing"; "arnazon" is a confusable), or a letter dropped from inside a name of six letters or
//   more ("amazn", "micosoft") — against the known brands, the sender's domain and (for the sender) the message's
//   names; for five-letter brands, only a letter that reads alike, under the brand's own suffix ("appie.com");
// - `brand_in_subdomain`: a brand's domain put in front of another one ("paypal.com.account-check.xyz"), or its
//   name (or other name: "amex") as a word of the subdomain;
// - `brand_token`: a brand's name (or a look-alike of it, or its other name) as one word of a hyphenated name
//   ("paypal-secure.com", "netfiix-support.com", "amex-card-services.net") or glued to a lure ("appleid"); for
//   brands whose names other businesses also use in theirs ("salesforce-consulting"), only beside a word of signing
//   in or paying ("salesforce-login", "intuit-invoices"); and a name the message itself shows with a word of
//   signing in beside it or glued to it ("nationwide-secure-logon.com" in mail naming nationwide.co.uk);
// - `typo` also covers a name under a misspelt ".com" ("acmecorp.co", "acmecorp.cm" for acmecorp.com).
//
// The registrable domain is read from the public suffix list (tldts, private suffixes included, so two users'
// `github.io` sites are two domains). Every scan here is one forward pass or a regular expression that can only
// start at a word boundary, so the work is linear in the text.
import { Buffer } from "node:buffer";
import { domainToASCII, domainToUnicode } from "node:url";
import { parse as parseDomain } from "tldts";
import { BoundedMemo } from "../bounded-memo.js";
import { latinLookalike, LOOKALIKE_PAIRS, LOOKALIKE_SEQUENCES } from "./confusables.js";

export type LookalikeKind = "mixed_script" | "confusable" | "typo" | "brand_in_subdomain" | "brand_token";

export interface Lookalike {
  readonly kind: LookalikeKind;
  /** The look-alike host name, in its ASCII (xn--) form. */
  readonly domain: string;
  /** The registrable domain it imitates (ASCII), or its ASCII reading when it imitates nothing known. */
  readonly imitates: string;
}

/**
 * Host names and labels as read before, per process: mail links the same few hosts and names again and again. Each
 * memory holds at most MAX_REMEMBERED entries and is emptied when full, so hostile mail bounds it too.
 */
const MAX_REMEMBERED = 10_000;
const PARTS = new BoundedMemo<string, DomainParts>(MAX_REMEMBERED);
const ASCII_FORMS = new BoundedMemo<string, string>(MAX_REMEMBERED);
const SKELETONS = new BoundedMemo<string, string>(MAX_REMEMBERED);

/**
 * Brands phishing mail most often imitates (registrable domains), from the phishing reports of the large mail
 * providers and anti-phishing groups. A look-alike of these is reported even when the message names no other.
 */
export const KNOWN_BRANDS: readonly string[] = [
  "paypal.com", "apple.com", "icloud.com", "microsoft.com", "office.com", "office365.com", "outlook.com", "live.com",
  "hotmail.com", "microsoftonline.com", "google.com", "gmail.com", "youtube.com", "amazon.com", "amazon.de",
  "amazon.co.uk", "netflix.com", "facebook.com", "instagram.com", "whatsapp.com", "linkedin.com", "twitter.com",
  "dropbox.com", "docusign.com", "docusign.net", "adobe.com", "wetransfer.com", "chase.com", "wellsfargo.com",
  "bankofamerica.com", "citibank.com", "americanexpress.com", "capitalone.com", "usbank.com", "hsbc.com",
  "barclays.co.uk", "santander.com", "lloydsbank.com", "natwest.com", "sparkasse.de", "commerzbank.de",
  "deutsche-bank.de", "postbank.de", "ing.com", "revolut.com", "wise.com", "n26.com", "coinbase.com", "binance.com",
  "kraken.com", "metamask.io", "blockchain.com", "stripe.com", "shopify.com", "ebay.com", "walmart.com", "target.com",
  "bestbuy.com", "costco.com", "aliexpress.com", "alibaba.com", "booking.com", "airbnb.com", "expedia.com", "uber.com",
  "dhl.com", "dhl.de", "fedex.com", "ups.com", "usps.com", "royalmail.com", "irs.gov", "github.com", "gitlab.com",
  "slack.com", "zoom.us", "okta.com", "salesforce.com", "intuit.com", "quickbooks.com", "xero.com", "godaddy.com",
  "cloudflare.com", "steamcommunity.com", "steampowered.com", "roblox.com", "epicgames.com", "spotify.com",
  "yahoo.com", "aol.com", "protonmail.com", "proton.me", "openai.com", "anthropic.com", "notion.so", "atlassian.com",
  "mastercard.com", "visa.com", "norton.com", "mcafee.com", "telegram.org", "discord.com", "tiktok.com",
  // Tax and post offices whose names refunds and parcels are faked in.
  "hmrc.gov.uk", "auspost.com.au", "canadapost.ca", "laposte.fr", "postnl.nl", "poste.it", "correos.es", "evri.com",
];

/**
 * The other domains of a brand's own, by its main one: short and link domains ("apple.co", "youtu.be", "aka.ms"),
 * sister brands it sends mail and links for ("live.com" for Microsoft, "ba.com" for British Airways), and names
 * that carry its name as a word ("google-analytics.com", "sharepointonline.com"). None of them is a look-alike, and
 * a link's text naming one over a link to another is one organisation. Curated from the brands' own mail; kept to
 * the brands above and a few airlines and networks whose short domains mail shows.
 */
const BRAND_FAMILIES: Readonly<Record<string, readonly string[]>> = {
  "google.com": [
    "youtube.com", "youtu.be", "gmail.com", "googlemail.com", "goo.gl", "g.co", "g.page", "withgoogle.com", "android.com",
    "blogger.com", "googleusercontent.com", "googleapis.com", "gstatic.com", "google-analytics.com",
    "googletagmanager.com", "googlecloud.com",
  ],
  "microsoft.com": [
    "live.com", "outlook.com", "office.com", "office365.com", "hotmail.com", "microsoftonline.com", "microsoft365.com",
    "office.net", "sharepoint.com", "sharepointonline.com", "onedrive.com", "aka.ms", "msft.it", "msftauth.net",
    "skype.com", "xbox.com", "bing.com", "msn.com", "azure.com", "windows.com",
  ],
  "apple.com": ["apple.co", "icloud.com", "me.com", "itunes.com", "apple.news", "apple-dns.net", "icloud-content.com", "cdn-apple.com"],
  "amazon.com": [
    "amzn.to", "a.co", "amazon.de", "amazon.co.uk", "amazonpay.com", "amazonpayments.com", "amazon-adsystem.com",
    "amazonaws.com", "media-amazon.com", "ssl-images-amazon.com", "amazontrust.com", "primevideo.com",
  ],
  "facebook.com": [
    "fb.com", "fb.me", "facebookmail.com", "fbcdn.net", "meta.com", "instagram.com", "instagr.am", "whatsapp.com",
    "wa.me", "messenger.com", "m.me",
  ],
  "twitter.com": ["x.com", "t.co"],
  "linkedin.com": ["lnkd.in", "linkedin-ei.com"],
  "paypal.com": ["paypal.me", "paypalobjects.com", "paypal-community.com", "paypal-corp.com", "paypal-prepaid.com"],
  "dropbox.com": ["db.tt", "dropboxusercontent.com"],
  "docusign.com": ["docusign.net", "docusign-europe.net"],
  "github.com": ["github.io", "githubusercontent.com", "githubassets.com", "git.io"],
  "adobe.com": ["adobesign.com", "adobelogin.com", "adobe.ly"],
  "citibank.com": ["citi.com", "citibankonline.com"],
  "chase.com": ["chase-email.com", "jpmorganchase.com", "jpmorgan.com"],
  "netflix.com": ["netflix-email.com"],
  "ebay.com": ["ebay.de", "ebay.co.uk", "ebay-kleinanzeigen.de"],
  "slack.com": ["slack-edge.com"],
  "zoom.us": ["zoom.com", "zoomgov.com"],
  "stripe.com": ["stripe-status.com"],
  "shopify.com": ["shopifyemail.com"],
  "bestbuy.com": ["bestbuy-email.com"],
  "spotify.com": ["spoti.fi", "spotify.link"],
  "reddit.com": ["redd.it"],
  "britishairways.com": ["ba.com"],
  "lufthansa.com": ["lh.com"],
};
/** A brand's other domain → its main one. */
const FAMILY_OF = new Map(Object.entries(BRAND_FAMILIES).flatMap(([main, others]) => others.map((d) => [d, main] as const)));

/**
 * Country suffixes under which a brand's own name is its own regional site ("amazon.com.au", "google.de"): the large
 * markets' (brands register their names there first). Not the country codes sold as generic names (.co, .io, .me,
 * .tk, .cc …), which anyone registers.
 */
const BRAND_COUNTRY_SUFFIXES = new Set([
  "de", "fr", "it", "es", "nl", "be", "at", "ch", "pl", "se", "dk", "no", "fi", "ie", "pt", "cz", "gr", "hu", "ro",
  "uk", "co.uk", "ca", "com.au", "com.br", "com.mx", "mx", "jp", "co.jp", "in", "co.in", "cn", "com.cn", "com.tr",
  "sg", "com.sg", "co.nz", "co.za", "ae", "sa", "com.ar", "cl", "kr", "co.kr", "tw", "com.tw", "hk", "com.hk",
]);

/**
 * Names of airlines, banks, carriers and large retailers that mail customers from their .com and link to their
 * regional sites (or the other way round: "klm.com" over "klm.nl"): under .com and a large market's country suffix,
 * one organisation. Curated and bounded; not look-alike targets of their own (those are KNOWN_BRANDS).
 */
const REGIONAL_BRAND_NAMES = new Set([
  // Airlines.
  "klm", "airfrance", "lufthansa", "britishairways", "iberia", "vueling", "emirates", "qatarairways", "etihad",
  "turkishairlines", "ryanair", "easyjet", "wizzair", "brusselsairlines", "flytap", "finnair", "aeromexico",
  "aircanada", "qantas", "singaporeair", "cathaypacific", "koreanair", "eurowings", "transavia", "jetblue",
  // Banks.
  "santander", "bbva", "bnpparibas", "societegenerale", "hsbc", "barclays", "abnamro", "rabobank", "unicredit",
  "intesasanpaolo", "deutschebank", "commerzbank", "revolut", "bunq",
  // Carriers.
  "dhl", "fedex", "postnl", "bpost", "chronopost", "colissimo",
  // Retailers, marketplaces and travel sites.
  "ikea", "zara", "uniqlo", "decathlon", "lidl", "aldi", "mediamarkt", "zalando", "asos", "carrefour", "fnac",
  "elcorteingles", "coolblue", "samsung", "nike", "adidas", "trivago",
]);

/**
 * Brands whose name as a subdomain or as a word of a hyphenated name is almost always an imitation. Not the tools
 * companies host under their own names ("github.acme.com", "gitlab.acme.com"), not the short names, and not
 * Sparkasse, whose every local bank is "sparkasse-<region>.de".
 */
const BRAND_WORD_DOMAINS = new Set([
  "paypal.com", "apple.com", "icloud.com", "microsoft.com", "office365.com", "outlook.com", "hotmail.com",
  "microsoftonline.com", "google.com", "gmail.com", "amazon.com", "netflix.com", "facebook.com", "instagram.com",
  "whatsapp.com", "linkedin.com", "dropbox.com", "docusign.com", "adobe.com", "wetransfer.com", "wellsfargo.com",
  "bankofamerica.com", "citibank.com", "americanexpress.com", "capitalone.com", "barclays.co.uk", "santander.com",
  "lloydsbank.com", "natwest.com", "commerzbank.de", "postbank.de", "revolut.com", "coinbase.com",
  "binance.com", "metamask.io", "blockchain.com", "ebay.com", "walmart.com", "aliexpress.com", "booking.com",
  "airbnb.com", "fedex.com", "royalmail.com", "steamcommunity.com", "steampowered.com", "roblox.com", "yahoo.com",
  "protonmail.com", "mastercard.com", "norton.com", "mcafee.com",
]);

interface Brand {
  readonly domain: string;
  /** The registrable domain without its public suffix ("paypal"). */
  readonly label: string;
  readonly skeleton: string;
  /** The domain between dots (".paypal.com."), as it stands inside a longer host name. */
  readonly dotted: string;
}

const BRANDS: readonly Brand[] = KNOWN_BRANDS.map((domain) => {
  const label = labelOf(domain);
  return { domain, label, skeleton: skeleton(label), dotted: `.${domain}.` };
});
/** A brand by the skeleton of its name; the first listed (its .com) for a brand under several suffixes. */
const BRAND_BY_SKELETON = new Map([...BRANDS].reverse().map((b) => [b.skeleton, b]));
const BRAND_BY_DOMAIN = new Map(BRANDS.map((b) => [b.domain, b]));
const BRAND_WORDS = BRANDS.filter((b) => BRAND_WORD_DOMAINS.has(b.domain));

/**
 * The organisation a registrable domain (ASCII) belongs to, as its main domain: a brand's other domain's brand
 * ("ba.com" → britishairways.com), a brand's name under a large market's country suffix its brand ("amazon.com.au"
 * → amazon.com), a regional brand's country site its .com ("klm.nl" → klm.com), any other domain itself.
 */
export function organisationOf(registrable: string): string {
  const family = FAMILY_OF.get(registrable);
  if (family) return family;
  const dot = registrable.indexOf(".");
  if (dot > 0 && REGIONAL_BRAND_NAMES.has(registrable.slice(0, dot))) {
    const suffix = registrable.slice(dot + 1);
    if (suffix === "com" || BRAND_COUNTRY_SUFFIXES.has(suffix)) return FAMILY_OF.get(`${registrable.slice(0, dot)}.com`) ?? `${registrable.slice(0, dot)}.com`;
  }
  if (dot > 0 && BRAND_COUNTRY_SUFFIXES.has(registrable.slice(dot + 1))) {
    const brand = BRAND_BY_SKELETON.get(registrable.slice(0, dot));
    if (brand && brand.label === registrable.slice(0, dot)) return FAMILY_OF.get(brand.domain) ?? brand.domain;
  }
  return registrable;
}

/** Whether a registrable domain (ASCII) is a brand's own: one of the brands, its other domains, its regional sites. */
function isBrandsOwn(registrable: string): boolean {
  return KNOWN_BRAND_SET.has(registrable) || organisationOf(registrable) !== registrable;
}

export interface DomainParts {
  /** The host name as given, lower-case, in Unicode. */
  readonly host: string;
  /** The registrable domain in Unicode ("paypal.com"), or null for an IP address or a bare suffix. */
  readonly registrable: string | null;
  /** The registrable domain without its public suffix ("paypal"). */
  readonly label: string;
  /** The labels in front of the registrable domain ("account.paypal.com" → "account"). */
  readonly subdomain: string;
}

/** The parts of a host name (ASCII or Unicode) as the public suffix list reads them. */
export function domainParts(host: string): DomainParts {
  return PARTS.get(host, readParts);
}

function readParts(host: string): DomainParts {
  const unicode = toUnicode(host.toLowerCase());
  const parsed = parseDomain(unicode, { allowPrivateDomains: true, extractHostname: false });
  const registrable = parsed.isIp ? null : parsed.domain;
  return {
    host: unicode,
    registrable,
    label: registrable ? (parsed.domainWithoutSuffix ?? "") : "",
    subdomain: parsed.subdomain ?? "",
  };
}

/** The registrable domain of a host name (ASCII), for comparing two hosts' organisations. */
export function registrableDomain(host: string): string | null {
  const registrable = domainParts(host).registrable;
  return registrable === null ? null : toAscii(registrable);
}

export function toAscii(domain: string): string {
  return ASCII_FORMS.get(domain, (d) => domainToASCII(d) || d);
}


export function toUnicode(domain: string): string {
  return domain.includes("xn--") ? domainToUnicode(domain) || domain : domain;
}

/**
 * Domain names in text ("paypal.com", "www.pаypal.com", "xn--pypal-4ve.com"), lower-case and as written, with their
 * index. Only names under a public suffix (or the reserved .example and .test), so "node.js" and "index.html" are
 * not names; addresses' domains ("a@b.com") are not listed.
 */
export function domainsIn(text: string, limit: number): { domain: string; written: string; index: number }[] {
  const out: { domain: string; written: string; index: number }[] = [];
  if (!hasDotBeforeLabel(text)) return out;
  for (const m of text.matchAll(DOMAIN_TOKEN)) {
    if (out.length >= limit) break;
    const domain = m[0].toLowerCase();
    if (isDomainName(domain)) out.push({ domain, written: m[0], index: m.index });
  }
  return out;
}

/**
 * A run of labels joined by single dots, not inside a longer word, an address or a path. The look-behind lets it
 * start only where a run begins, so each run is tried once: linear in the text.
 */
const DOMAIN_TOKEN = /(?<![\p{L}\p{N}\p{M}._@/-])[\p{L}\p{N}\p{M}-]{1,63}(?:\.[\p{L}\p{N}\p{M}-]{1,63}){1,8}(?![\p{L}\p{N}\p{M}_@-]|\.[\p{L}\p{N}\p{M}])/gu;
const RESERVED_SUFFIXES = new Set(["example", "test"]);

/**
 * Whether a dot in the text is followed by a character a label can start with (ASCII letters, digits and "-", or
 * anything beyond ASCII): every DOMAIN_TOKEN has one, and most lines' dots end sentences.
 */
function hasDotBeforeLabel(text: string): boolean {
  for (let k = text.indexOf("."); k >= 0; k = text.indexOf(".", k + 1)) {
    const next = text.charCodeAt(k + 1);
    if (next >= 0x80 || ASCII_LABEL[next] === 1) return true;
  }
  return false;
}

const ASCII_LABEL = Uint8Array.from({ length: 128 }, (_, c) => (/[A-Za-z0-9-]/.test(String.fromCharCode(c)) ? 1 : 0));

export function isDomainName(domain: string): boolean {
  if (domain.startsWith("-") || domain.endsWith("-") || /^[\d.]+$/.test(domain)) return false;
  const parsed = parseDomain(domain, { allowPrivateDomains: true, extractHostname: false });
  if (!parsed.domain || !parsed.domainWithoutSuffix || parsed.isIp) return false;
  return parsed.isIcann === true || parsed.isPrivate === true || RESERVED_SUFFIXES.has(parsed.publicSuffix ?? "");
}

/** What each letter of a label reads as in ASCII: accents removed, look-alike letters and sequences replaced. */
export function skeleton(label: string): string {
  return SKELETONS.get(label, readSkeleton);
}

function readSkeleton(label: string): string {
  const plain = label.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
  let out = "";
  for (const char of plain) out += latinLookalike(char);
  for (const [sequence, letter] of LOOKALIKE_SEQUENCES) out = out.replaceAll(sequence, letter);
  return out;
}

/** Whether a label mixes scripts that a real name never mixes (digits and hyphens belong to every script). */
export function isMixedScript(label: string): boolean {
  // ASCII letters are all Latin.
  if (isPlainAscii(label)) return false;
  const scripts = new Set<string>();
  for (const char of label) {
    const script = scriptOf(char);
    if (script) scripts.add(script);
  }
  if (scripts.size <= 1) return false;
  // Japanese, Chinese and Korean names mix Han with kana, bopomofo or hangul, and any of them with Latin.
  const cjk = new Set(["Han", "Hiragana", "Katakana", "Bopomofo", "Hangul", "Latin"]);
  return ![...scripts].every((s) => cjk.has(s));
}

const SCRIPTS: readonly [string, RegExp][] = [
  ["Latin", /\p{Script=Latin}/u],
  ["Cyrillic", /\p{Script=Cyrillic}/u],
  ["Greek", /\p{Script=Greek}/u],
  ["Armenian", /\p{Script=Armenian}/u],
  ["Han", /\p{Script=Han}/u],
  ["Hiragana", /\p{Script=Hiragana}/u],
  ["Katakana", /\p{Script=Katakana}/u],
  ["Hangul", /\p{Script=Hangul}/u],
  ["Bopomofo", /\p{Script=Bopomofo}/u],
  ["Cherokee", /\p{Script=Cherokee}/u],
];

function scriptOf(char: string): string | null {
  if (!/\p{L}/u.test(char)) return null;
  for (const [name, pattern] of SCRIPTS) if (pattern.test(char)) return name;
  return "Other";
}

/** Whether a label is written wholly in letters of another script that all read as Latin ones ("аррӏе"). */
function isWholeScriptConfusable(label: string): boolean {
  let letters = 0;
  for (const char of label.normalize("NFKD").replace(/\p{M}/gu, "")) {
    if (!/\p{L}/u.test(char)) continue;
    letters++;
    if (/[a-z]/.test(char) || !/^[a-z0-9]$/.test(latinLookalike(char))) return false;
  }
  return letters > 0;
}

/**
 * The domains of one message a look-alike may imitate: the sender's, the message's own names, and the known brands.
 * Only a plain name imitates: of "paypa1.com" and "paypal.com" in one message, the first reads as the second.
 */
export class DomainReferences {
  /** Skeleton of a plain label → the registrable domain (ASCII) it belongs to. */
  private readonly bySkeleton = new Map<string, string>();
  private readonly plain: Reference[] = [];
  /** What each host read as, by host. */
  private readonly read = new Map<string, Lookalike | null>();
  private readonly from: Reference | null = null;

  /**
   * `authenticatedFrom`: the sender's registrable domain when sender authentication passed — a brand's own mail
   * links its own hyphenated and sub-domains ("paypal-communication.com" in mail from paypal.com), which are not
   * imitations then.
   */
  private readonly authenticatedFrom: string | null;

  constructor(fromDomain: string | null, messageDomains: Iterable<string>, authenticatedFrom: string | null = null) {
    // Assigned here, not as a parameter property: the parser worker loads this file with Node's type stripping.
    this.authenticatedFrom = authenticatedFrom;
    const from = fromDomain ? domainParts(fromDomain) : null;
    if (from?.registrable && isPlainLabel(from.label)) {
      this.from = { label: from.label, domain: toAscii(from.registrable), skeleton: skeleton(from.label) };
      this.bySkeleton.set(this.from.skeleton, this.from.domain);
    }
    const seen = new Set<string>();
    for (const domain of messageDomains) {
      if (this.plain.length >= MAX_REFERENCES) break;
      const parts = domainParts(domain);
      if (!parts.registrable || !isPlainLabel(parts.label) || seen.has(parts.registrable)) continue;
      seen.add(parts.registrable);
      const reference = { label: parts.label, domain: toAscii(parts.registrable), skeleton: skeleton(parts.label) };
      this.plain.push(reference);
      if (!this.bySkeleton.has(reference.skeleton)) this.bySkeleton.set(reference.skeleton, reference.domain);
    }
  }

  /**
   * What a host name imitates, or null when it reads as itself. `sender`: the host is the From domain, which is
   * also compared letter by letter with the message's other names. `written`: the name as the message writes it,
   * capitals kept, when it may differ from `host` ("appIe.com").
   */
  lookalike(host: string, sender = false, written: string = host): Lookalike | null {
    // A message links the same few hosts many times: each is read once.
    const asL = capitalIAsL(written);
    const key = `${sender ? "from:" : ""}${asL === null ? host : written}`;
    const known = this.read.get(key);
    if (known !== undefined) return known;
    const found = this.readLookalike(host, sender, asL);
    this.read.set(key, found);
    return found;
  }

  private readLookalike(host: string, sender: boolean, asL: string | null): Lookalike | null {
    const parts = domainParts(host);
    if (!parts.registrable) return null;
    const domain = toAscii(parts.host);
    const registrable = toAscii(parts.registrable);
    // A brand's own domain is no look-alike of another brand's ("microsoftonline.com" is Microsoft's).
    if (isBrandsOwn(registrable)) return null;
    // A capital I written where a small l belongs reads as that l ("appIe.com" is apple.com to a reader).
    if (asL !== null) {
      const readsAs = skeleton(domainParts(asL).label);
      const imitated = BRAND_BY_SKELETON.get(readsAs)?.domain ?? this.bySkeleton.get(readsAs);
      if (imitated && imitated !== registrable) return { kind: "confusable", domain, imitates: imitated };
    }
    const labels = [...parts.subdomain.split("."), parts.label].filter(Boolean);
    const mixed = labels.some(isMixedScript);
    const readsAs = skeleton(parts.label);
    // The same name read through look-alike letters, under any suffix.
    if (readsAs !== parts.label) {
      const imitated = BRAND_BY_SKELETON.get(readsAs)?.domain ?? this.bySkeleton.get(readsAs);
      // The same name under another suffix reads as itself ("icloud.com.cn": "cl" only reads as "d").
      if (imitated && imitated !== registrable && labelOf(imitated) !== parts.label) {
        return { kind: mixed ? "mixed_script" : "confusable", domain, imitates: imitated };
      }
    }
    if (mixed) return { kind: "mixed_script", domain, imitates: `${readsAs}.${suffixOf(parts)}` };
    // A brand's name written with look-alike letters or digits, then more ("micr0soft365", "g00gle-drive",
    // "secure-paypa1"): the brand's part itself is disguised, so whatever stands beside it.
    if (readsAs !== parts.label) {
      const disguised = disguisedBrand(parts.label, readsAs);
      if (disguised && disguised !== registrable) return this.unlessOwn({ kind: "confusable", domain, imitates: disguised });
    }
    for (const reference of this.typoReferences(sender, readsAs.length)) {
      if (reference.domain !== registrable && (oneLookalikeEdit(readsAs, reference.skeleton) || droppedLetter(readsAs, reference.skeleton))) {
        return this.unlessOwn({ kind: "typo", domain, imitates: reference.domain });
      }
    }
    const suffix = suffixOf(parts);
    for (const brand of readsAs.length === MIN_TYPO_LABEL - 1 ? FIVE_LETTER_BRANDS : []) {
      if (fiveLetterTypo(readsAs, brand, suffix)) return this.unlessOwn({ kind: "typo", domain, imitates: brand.domain });
    }
    // Any one-letter slip after the first letter, under the brand's own suffix or a generic one phishing registers
    // ("paypail.com", "whatsaap.com", "amazone.com", "yaho.com"); a word of its own under a country's suffix is not.
    for (const brand of EDITABLE_BRANDS) {
      // The name as written too: "cornbase" is one letter from "coinbase", though "rn" reads as "m".
      if ((GENERIC_SUFFIXES.has(suffix) || brand.suffixes.has(suffix)) && (oneSlip(readsAs, brand.label) || oneSlip(parts.label, brand.label))) {
        return this.unlessOwn({ kind: "typo", domain, imitates: brand.domain });
      }
    }
    // A brand's own name under a cheap suffix phishing registers and the brand does not use ("paypal.xyz").
    const sameName = EDITABLE_BRANDS_BY_LABEL.get(readsAs);
    if (sameName && CHEAP_SUFFIXES.has(suffix) && !sameName.suffixes.has(suffix)) {
      return this.unlessOwn({ kind: "typo", domain, imitates: sameName.domain });
    }
    const tokens = parts.label.split("-");
    const lure = tokens.some(isLure);
    const credential = tokens.some(isCredentialLure);
    if (parts.subdomain) {
      const words = withJoinedPairs(skeleton(parts.subdomain).split(/[.-]/));
      const dottedSubdomain = `.${parts.subdomain}.`;
      for (const brand of BRANDS) {
        if (brand.domain === registrable) continue;
        // A brand's whole domain in front of another ("login.live.com.session-check.net"), or its name as a word
        // of the subdomain (for brands others name themselves after, only with a lure in the name).
        const wholeDomain = dottedSubdomain.includes(brand.dotted);
        // An everyday word's brand only beside a word of signing in ("chase.account-verify-alerts.com"; not
        // "booking.lufthansa.com").
        const asWord =
          words.includes(brand.skeleton) &&
          ((BRAND_WORDS.includes(brand) && !COMMON_WORD_BRANDS.has(brand.label)) ||
            (lure && brandWordWithLure(brand)) ||
            (credential && brand.label.length >= MIN_BRAND_WORD));
        if (wholeDomain || asWord) return this.unlessOwn({ kind: "brand_in_subdomain", domain, imitates: brand.domain });
      }
      // A brand's other name beside a lure ("amex.card-services.net").
      const alias = words
        .filter((w) => (w.length <= 3 ? credential : lure))
        .map((w) => BRAND_ALIASES.get(w))
        .find((a) => a !== undefined && a !== registrable);
      if (alias) return this.unlessOwn({ kind: "brand_in_subdomain", domain, imitates: alias });
    }
    // Each word, and each pair of words written with a hyphen between them ("we-transfer").
    // A slip of a letter only in a word as written: two words joined are seldom one slip from a name by design.
    const words = tokens.length >= 2 ? withJoinedPairs(tokens) : [];
    for (let k = 0; k < words.length; k++) {
      const brand = brandOfToken(words[k]!, lure, credential, k < tokens.length);
      if (brand) return this.unlessOwn({ kind: "brand_token", domain, imitates: brand.domain });
    }
    // A brand glued to a lure word ("appleid", "paypalsecure", "securenetflix").
    for (const token of tokens) {
      const brand = gluedBrand(token);
      if (brand && brand !== registrable) return this.unlessOwn({ kind: "brand_token", domain, imitates: brand });
    }
    // Another name of this message with a word of signing in beside it or glued to it ("nationwide-secure-logon.com"
    // in a message that names nationwide.co.uk).
    const builtOn = this.messageNameWithLure(tokens, registrable);
    if (builtOn) return this.unlessOwn({ kind: "brand_token", domain, imitates: builtOn });
    if (MISSPELT_COM.has(suffix)) {
      const imitated = this.sameLabelDotCom(parts.label, sender);
      if (imitated) return this.unlessOwn({ kind: "typo", domain, imitates: imitated });
    }
    return null;
  }

  /**
   * The domain of the message whose name is a word of this hyphenated one (or a run of its words: "northwind-health"
   * in "northwind-health-portal") beside a lure word, or glued to a word of signing in: a look-alike built on a name
   * the message itself shows ("hmrc-refund-claim.net" in mail naming hmrc.gov.uk). Names of four letters or more,
   * not themselves lure words; beside a word only of service or sharing ("team", "help", "docs"), only names of a
   * brand's length; glued, only to a word of signing in. Each word is cut at each place once and both halves looked
   * up, so the work is the name's length, not the message's names.
   */
  private messageNameWithLure(tokens: readonly string[], registrable: string): string | null {
    const named = (name: string, min: number): string | null => {
      const domain = name.length >= min && !isLure(name) ? this.bySkeleton.get(skeleton(name)) : undefined;
      return domain !== undefined && domain !== registrable ? domain : null;
    };
    if (tokens.length >= 2) {
      const strong = tokens.some((t) => isLure(t) && !SOFT_LURES.has(t));
      const min = strong ? MIN_SHOWN_NAME : MIN_BRAND_WORD;
      if (strong || tokens.some(isLure)) {
        for (let i = 0; i < tokens.length && i < 16; i++) {
          for (let j = i + 1; j <= Math.min(tokens.length, i + 3); j++) {
            if (j - i === tokens.length) continue;
            const whole = named(tokens.slice(i, j).join("-"), min);
            if (whole) return whole;
          }
        }
      }
    }
    for (const token of tokens) {
      for (let cut = 2; cut <= token.length - 2; cut++) {
        const head = token.slice(0, cut);
        const tail = token.slice(cut);
        const glued = (isCredentialLure(tail) ? named(head, MIN_BRAND_WORD) : null) ?? (isCredentialLure(head) ? named(tail, MIN_BRAND_WORD) : null);
        if (glued) return glued;
      }
    }
    return null;
  }

  /** A ".com" domain of the same name among the brands, the sender's domain and (for the sender) the message's. */
  private sameLabelDotCom(label: string, sender: boolean): string | null {
    const dotCom = `${label}.com`;
    if (BRANDS.some((b) => b.domain === dotCom)) return dotCom;
    if (!sender && this.from?.domain === dotCom) return dotCom;
    if (sender && this.plain.some((p) => p.domain === dotCom)) return dotCom;
    return null;
  }

  /** A look-alike of the authenticated sender's own brand, in its own mail, is one of its names. */
  private unlessOwn(found: Lookalike): Lookalike | null {
    return this.authenticatedFrom !== null && found.imitates === this.authenticatedFrom ? null : found;
  }

  /**
   * The names a one-letter typo is checked against: the known brands and the sender's domain; for the sender's
   * domain itself, the message's other names too (a typo of a name the message links to).
   */
  private typoReferences(sender: boolean, length: number): readonly Reference[] {
    // Brands whose skeleton is more than a letter longer or shorter are no one edit or dropped letter away.
    const brands = nearLength(TYPO_BRANDS, length);
    const own = sender ? this.plain.filter((p) => p.label.length >= MIN_TYPO_LABEL) : [];
    if (this.from && !sender && this.from.label.length >= MIN_TYPO_LABEL) own.push(this.from);
    return own.length === 0 ? brands : [...brands, ...own];
  }
}

/** Whether a registrable domain (ASCII) is one of the known brands'. */
export function isKnownBrand(registrable: string): boolean {
  return KNOWN_BRAND_SET.has(registrable);
}

const KNOWN_BRAND_SET = new Set(KNOWN_BRANDS);

/** A name a look-alike may imitate, known by its skeleton ("fernbrook" by "fembrook", as a reader may read it). */
interface Reference {
  readonly label: string;
  readonly domain: string;
  readonly skeleton: string;
}

/**
 * A label written only in the letters, digits and hyphens that it reads as: no look-alike letter or digit in it
 * ("paypa1" is not plain). Letter pairs that read as one ("rn" in "fernbrook") are plain: real names have them.
 */
function isPlainLabel(label: string): boolean {
  if (!/^[a-z0-9-]+$/.test(label)) return false;
  for (const char of label) if (latinLookalike(char) !== char) return false;
  return true;
}

/** Words of signing in: beside them even a brand named like an everyday word is the brand ("chase-secure-login"). */
const CREDENTIAL_LURES = new Set([
  "login", "logon", "signin", "signon", "secure", "security", "verify", "verification", "account", "accounts", "auth",
  "password", "wallet", "id", "unlock", "recovery", "session",
]);
/** Words of signing in, paying, delivering and sharing that phishing names put beside a brand's name. */
const LURE_WORDS = new Set([
  ...CREDENTIAL_LURES, "sign", "support", "update", "billing", "invoice", "invoices", "payment", "payments", "pay", "alert",
  "alerts", "service", "services", "help", "helpdesk", "reset", "confirm", "portal", "online", "access", "refund", "claim",
  "notice", "team", "renew", "renewal", "check", "delivery", "parcel", "track", "tracking", "meeting", "join", "docs",
  "document", "documents", "share", "sharing", "files", "webmail", "storage", "wallet", "statement", "receipt", "checkout",
  "payout", "sso", "mfa", "otp", "kyc", "vault", "banking", "transfer", "doc", "file", "bill",
  // German, for the German banks among the brands ("sparkasse-sicherheit.de").
  "sicherheit", "sicher", "konto", "kundenservice", "verifizierung", "freischaltung", "pushtan", "anmeldung", "onlinebanking",
  // Parcels, payments and security in the other languages of the post offices and banks among the brands
  // ("laposte-colis.fr", "correos-envio.es", "postnl-pakket.nl").
  "colis", "livraison", "paiement", "facture", "remboursement", "securite", "envio", "paquete", "entrega", "pago", "factura",
  "reembolso", "seguridad", "pakket", "bezorging", "zending", "betaling", "factuur", "veiligheid", "paket", "sendung",
  "zustellung", "lieferung", "zahlung", "rechnung", "erstattung", "pacco", "spedizione", "consegna", "pagamento", "fattura",
  "rimborso", "sicurezza", "encomenda", "fatura", "seguranca", "conta", "cuenta", "compte", "rekening", "conto",
]);
/** Beginnings of lure words, for their other forms ("redelivery", "verifying", "suspended", "payments"). */
const LURE_STEMS = ["deliver", "redeliver", "verif", "secur", "login", "signin", "account", "payment", "invoic", "track", "renew", "updat", "confirm", "suspend", "unlock", "recover", "refund", "billing", "support", "password", "authent"];

function isLure(word: string): boolean {
  return LURE_WORDS.has(word) || LURE_STEMS.some((stem) => word.startsWith(stem)) || (word.endsWith("s") && LURE_WORDS.has(word.slice(0, -1)));
}

/** Beginnings of words of signing in ("verifying", "securelogin", "accountupdate"). */
const CREDENTIAL_STEMS = ["verif", "secur", "login", "logon", "signin", "account", "password", "authent", "unlock", "recover"];

function isCredentialLure(word: string): boolean {
  return CREDENTIAL_LURES.has(word) || CREDENTIAL_STEMS.some((stem) => word.startsWith(stem));
}

/**
 * Other names of the brands, which phishing puts in names beside a lure word ("amex-card-services.net",
 * "bofa-secure-alerts.com", "o365-login.com"); like the short brand names, only beside a lure.
 */
const BRAND_ALIASES = new Map([
  // Initials of the banks, only beside a word of signing in when of three letters or fewer ("boa-secure", "wf-login").
  ["boa", "bankofamerica.com"], ["wf", "wellsfargo.com"], ["cap1", "capitalone.com"], ["jpmc", "chase.com"],
  ["amex", "americanexpress.com"], ["bofa", "bankofamerica.com"], ["citi", "citibank.com"], ["msft", "microsoft.com"],
  ["o365", "microsoft.com"], ["m365", "microsoft.com"], ["ms365", "microsoft.com"], ["onedrive", "microsoft.com"],
  ["sharepoint", "microsoft.com"], ["xbox", "microsoft.com"], ["itunes", "apple.com"], ["gdrive", "google.com"],
  ["aws", "amazon.com"],
]);

/** Words and each two neighbours joined: a brand's name split by a hyphen reads as one ("we-transfer"). */
function withJoinedPairs(words: readonly string[]): string[] {
  const out = [...words];
  for (let i = 0; i + 1 < words.length && i < 16; i++) out.push(`${words[i]}${words[i + 1]}`);
  return out;
}

/** Short brand names that phishing puts in names as a word of their own ("dhl-express-delivery", "hsbc-uk-secure"). */
const SHORT_BRAND_WORDS = new Set([
  "dhl", "ups", "usps", "hsbc", "irs", "zoom", "aol", "visa", "uber", "okta", "ebay", "ing", "n26", "wise", "hmrc", "evri",
]);

/** Suffixes that read as ".com" with a letter dropped or doubled ("co", "cm", "con", "corn"). */
const MISSPELT_COM = new Set(["co", "cm", "om", "con", "corn", "comm", "cpm"]);

/**
 * The brand a word of a hyphenated name stands for: its name, or one look-alike edit from it; a brand that other
 * businesses name themselves after only beside a lure word.
 */
function brandOfToken(token: string, lure: boolean, credential: boolean, slips: boolean): Brand | null {
  if (SHORT_BRAND_WORDS.has(token)) return lure ? (BRAND_BY_SKELETON.get(token) ?? null) : null;
  const alias = BRAND_ALIASES.get(token);
  if (alias) return (token.length <= 3 ? credential : lure) ? (BRAND_BY_DOMAIN.get(alias) ?? null) : null;
  if (token.length < MIN_BRAND_WORD) return null;
  const readsAs = skeleton(token);
  const exact = BRAND_BY_SKELETON.get(readsAs);
  // A brand named like an everyday word ("office", "booking") is that word, unless it is written to look like it or
  // stands beside a word of signing in.
  const plainWord = readsAs === token && COMMON_WORD_BRANDS.has(token) && !credential;
  if (exact && exact.label.length >= MIN_BRAND_WORD && !plainWord && (lure || BRAND_WORDS.includes(exact))) return exact;
  // Every test below needs the brand's name or skeleton within a letter of the word's length.
  for (const brand of nearLength(lure ? BRANDS : BRAND_WORDS, readsAs.length)) {
    if (brand.label.length >= MIN_TYPO_LABEL && oneLookalikeEdit(readsAs, brand.skeleton)) return brand;
    // The looser typos only beside a lure ("micosoft-support", "appie-id-verify", "paypail-secure").
    if (lure && (droppedLetter(readsAs, brand.skeleton) || fiveLetterTypo(readsAs, brand, null))) return brand;
    if (slips && lure && brand.label.length >= MIN_BRAND_WORD && !COMMON_WORD_BRANDS.has(brand.label) && oneSlip(readsAs, brand.label)) return brand;
  }
  return null;
}

/**
 * The brand whose name a label starts or ends with, written with look-alike characters ("micr0soft" in
 * "micr0soft365"), when more stands beside it: names of five letters or more that are not everyday words.
 */
function disguisedBrand(label: string, readsAs: string): string | null {
  if (readsAs.length !== label.length) return null;
  for (const brand of EDITABLE_BRANDS) {
    const n = brand.label.length;
    if (readsAs.length <= n) continue;
    if (readsAs.startsWith(brand.label) && label.slice(0, n) !== brand.label) return brand.domain;
    if (readsAs.endsWith(brand.label) && label.slice(-n) !== brand.label) return brand.domain;
  }
  return null;
}

function brandWordWithLure(brand: Brand): boolean {
  return brand.label.length >= MIN_BRAND_WORD && !COMMON_WORD_BRANDS.has(brand.label);
}

/**
 * The domain of a phished brand whose name (or other name of four letters or more) and a lure word are written as
 * one word ("appleid", "paypalsecure", "securenetflix", "amexlogin").
 */
function gluedBrand(token: string): string | null {
  if (token.length < MIN_BRAND_WORD + 2) return null;
  for (const brand of BRAND_WORDS) if (gluedTo(token, brand.label, isLure)) return brand.domain;
  for (const [alias, domain] of BRAND_ALIASES) if (alias.length >= 4 && gluedTo(token, alias, isLure)) return domain;
  return null;
}

/** Whether a word is a name with a lure word glued before or after it. */
function gluedTo(token: string, name: string, lure: (word: string) => boolean): boolean {
  if (token.length <= name.length) return false;
  const rest = token.startsWith(name) ? token.slice(name.length) : token.endsWith(name) ? token.slice(0, -name.length) : null;
  return rest !== null && lure(rest);
}

/** Brands whose names are everyday words, which other names use for their meaning. */
const COMMON_WORD_BRANDS = new Set(["office", "target", "booking", "slack", "notion", "discord", "chase", "kraken", "proton", "norton"]);

/** Brand names shorter than this are words of too many other names ("ups", "dhl", "chase" aside). */
const MIN_BRAND_WORD = 5;
/** A name the message shows, beside a lure in a look-alike, has at least this many letters ("hmrc"). */
const MIN_SHOWN_NAME = 4;
/** Lure words of service and sharing, which a company's own other names carry too ("acme-team", "acme-docs"). */
const SOFT_LURES = new Set(["team", "help", "online", "service", "services", "notice", "check", "share", "sharing", "files", "docs", "document", "documents", "join", "meeting", "storage", "track", "tracking", "delivery", "parcel", "support", "webmail", "access"]);

/** References taken from one message at most: its links and the names in its text. */
const MAX_REFERENCES = 200;
/** Shorter names are one letter away from too many real ones. */
const MIN_TYPO_LABEL = 6;
/** Brands of five letters, whose typos are read only under their own suffix. */
const FIVE_LETTER_BRANDS = BRANDS.filter((b) => b.label.length === MIN_TYPO_LABEL - 1);
/** Brands a one-letter typo of the sender's or a link's name is read against. */
const TYPO_BRANDS = BRANDS.filter((b) => b.label.length >= MIN_TYPO_LABEL);

/** Per list of brands, by a word's length, the brands whose name or skeleton is within a letter of it (in order). */
const NEAR_LENGTH = new Map<readonly Brand[], Map<number, readonly Brand[]>>();
/** Lengths kept per list: a name is at most 63 letters, its skeleton seldom longer. */
const MAX_NEAR_LENGTH = 128;

/**
 * The brands of a list, in its order, that a word of this length can be one letter from (an edit, a slip or a
 * dropped letter): the others cannot match any of those tests, and are not tried.
 */
function nearLength(list: readonly Brand[], length: number): readonly Brand[] {
  const near = (b: Brand) => Math.abs(b.skeleton.length - length) <= 1 || Math.abs(b.label.length - length) <= 1;
  if (length > MAX_NEAR_LENGTH) return list.filter(near);
  let byLength = NEAR_LENGTH.get(list);
  if (!byLength) NEAR_LENGTH.set(list, (byLength = new Map()));
  let brands = byLength.get(length);
  if (!brands) byLength.set(length, (brands = list.filter(near)));
  return brands;
}
/**
 * Brands any one-letter slip of whose name is read as a typo: names of five letters or more that are not everyday
 * words, once per name, with the suffixes the brand has.
 */
const EDITABLE_BRANDS: readonly (Brand & { readonly suffixes: ReadonlySet<string> })[] = [...new Set(BRANDS.map((b) => b.label))]
  .filter((label) => label.length >= MIN_BRAND_WORD && !COMMON_WORD_BRANDS.has(label) && /^[a-z0-9]+$/.test(label))
  .map((label) => {
    const all = BRANDS.filter((b) => b.label === label);
    return { ...all[0]!, suffixes: new Set(all.map((b) => b.domain.slice(label.length + 1))) };
  });
const EDITABLE_BRANDS_BY_LABEL = new Map(EDITABLE_BRANDS.map((b) => [b.label, b]));
/**
 * The new generic suffixes phishing registers most and the free or cheap country codes (the registries' abuse
 * reports): a brand's exact name under one of them is not the brand's (brands keep their names under .com, .net,
 * .org and their countries' suffixes; their own other domains are in BRAND_FAMILIES).
 */
const CHEAP_SUFFIXES = new Set([
  "top", "xyz", "shop", "store", "online", "site", "website", "live", "life", "click", "link", "icu", "buzz", "club",
  "vip", "work", "rest", "cfd", "sbs", "bond", "cyou", "lol", "quest", "monster", "fun", "space", "today", "support",
  "services", "help", "center", "email", "digital", "tech", "cloud", "pw", "tk", "ml", "ga", "cf", "gq", "su", "ws", "cc",
]);
/**
 * Generic suffixes, where a brand's name with a slip is read as a typo whatever the brand's own suffix: the old
 * generic ones and the new ones the phishing reports of the registries' abuse groups name most (.top, .xyz, .shop …),
 * and the country codes sold as generic names (.co, .io, .me, .cc, .tk …).
 */
const GENERIC_SUFFIXES = new Set([
  "com", "net", "org", "info", "biz", "co", "io", "me", "cc", "ws", "pw", "tk", "ml", "ga", "cf", "gq", "su", "ly", "to",
  "app", "dev", "page", "top", "xyz", "shop", "store", "online", "site", "website", "live", "life", "click", "link",
  "icu", "buzz", "club", "vip", "work", "rest", "cfd", "sbs", "bond", "cyou", "lol", "quest", "monster", "fun",
  "space", "today", "support", "services", "help", "center", "email", "digital", "tech", "cloud", "one", "pro", "mobi",
]);

/**
 * How a host name is shown to a model: in ASCII (xn--) when its Unicode form could pass for another name (mixed
 * scripts, or wholly in letters that read as Latin ones), as itself otherwise ("bücher.de" stays readable).
 */
export function displayHost(host: string): string {
  const unicode = toUnicode(host.toLowerCase());
  if (isPlainAscii(unicode)) return host;
  const suspicious = unicode.split(".").some((label) => isMixedScript(label) || isWholeScriptConfusable(label));
  return suspicious ? toAscii(unicode) : host;
}

/**
 * Whether a label is one look-alike edit from another: one letter swapped for one that reads alike, two neighbours
 * swapped ("docusing"), or a doubled letter added or dropped ("paypall", "gooogle"). Compared as skeletons, so a
 * digit for a letter counts as that letter ("netfl1x" is "netfllx", one l/i from "netflix").
 */
export function oneLookalikeEdit(label: string, reference: string): boolean {
  if (label === reference) return false;
  if (label.length === reference.length) {
    const differ: number[] = [];
    for (let i = 0; i < label.length && differ.length <= 2; i++) if (label[i] !== reference[i]) differ.push(i);
    if (differ.length === 1) return LOOKALIKE_PAIRS.has(`${label[differ[0]!]}${reference[differ[0]!]}`);
    const [a, b] = differ as [number, number];
    return differ.length === 2 && b === a + 1 && label[a] === reference[b] && label[b] === reference[a];
  }
  const [long, short] = label.length > reference.length ? [label, reference] : [reference, label];
  if (long.length !== short.length + 1) return false;
  let i = 0;
  while (i < short.length && long[i] === short[i]) i++;
  // The extra letter doubles its neighbour, and the rest is the same.
  const doubled = long[i] === long[i - 1] || long[i] === long[i + 1];
  return doubled && long.slice(i + 1) === short.slice(i);
}

/**
 * Whether a label is a name of six letters or more with one letter dropped from inside it ("amazn", "micosoft").
 * Not the first or last letter, which leave other words ("cloud" of "icloud", "strip" of "stripe"), and not the
 * words and names of their own that a dropped letter makes.
 */
function droppedLetter(label: string, name: string): boolean {
  if (name.length < MIN_TYPO_LABEL || label.length !== name.length - 1 || REAL_NAMES_A_LETTER_SHORT.has(label)) return false;
  if (label[0] !== name[0] || label.at(-1) !== name.at(-1)) return false;
  let i = 1;
  while (i < label.length && label[i] === name[i]) i++;
  return label.slice(i) === name.slice(i + 1);
}

/**
 * A five-letter brand's name with a letter swapped for one that reads alike ("appie", "gmaii"), under the brand's
 * own suffix (`suffix`; null for a word of a hyphenated name beside a lure): five-letter names under other
 * suffixes are often other businesses' ("appie.nl").
 */
function fiveLetterTypo(label: string, brand: Brand, suffix: string | null): boolean {
  const sameSuffix = suffix === null || brand.domain === `${brand.label}.${suffix}`;
  return sameSuffix && brand.label.length === MIN_TYPO_LABEL - 1 && label.length === brand.label.length && oneLookalikeEdit(label, brand.skeleton);
}

/**
 * Words and names of their own that are a brand's name with one letter slipped (from the words of an English
 * dictionary one such slip from a brand, and names seen in mail): not typos.
 */
const REAL_NAMES_A_LETTER_SHORT = new Set([
  "papal", "inuit", "revolt", "stipe", "cosco", "titter", "booing", "goole", "betbuy", "deutschebank",
  "ample", "apply", "twister", "twitted", "grail", "adore", "stride", "strife", "strike", "strive", "stript", "strips",
  "barclay", "photon", "discard", "paypay", "adobo",
]);

/**
 * Whether a label is a name with one letter slipped after its first ("paypail", "goggle", "whatsaap", "amazone",
 * "yaho"): one inserted, dropped (not the last, unless it was doubled) or replaced, or two neighbours swapped.
 * Readers anchor on the first letter (a name with another one is mostly another word: "finance", "cooking"), and a
 * letter added at the end that inflects the name ("stripes", "chased", "googler") leaves a word of its own.
 */
function oneSlip(label: string, name: string): boolean {
  if (label === name || label[0] !== name[0] || Math.abs(label.length - name.length) > 1 || REAL_NAMES_A_LETTER_SHORT.has(label)) return false;
  let i = 1;
  while (i < label.length && i < name.length && label[i] === name[i]) i++;
  if (label.length === name.length) {
    const rest = i + 1;
    if (label.slice(rest) === name.slice(rest)) return true;
    return label[i] === name[i + 1] && label[i + 1] === name[i] && label.slice(i + 2) === name.slice(i + 2);
  }
  if (label.length > name.length) {
    if (label.startsWith(name) && INFLECTIONS.has(label.at(-1)!)) return false;
    return label.slice(i + 1) === name.slice(i);
  }
  const lastDropped = i === name.length - 1;
  return label.slice(i) === name.slice(i + 1) && (!lastDropped || name[i] === name[i - 1]);
}

/** Letters that, added to a name's end, inflect it ("stripes", "googled", "chaser"). */
const INFLECTIONS = new Set(["s", "d", "r"]);

/**
 * A host name as written, with each capital I that follows a small letter read as a small l ("appIe.com" →
 * "apple.com"), or null when it has none: names are case-insensitive, so that capital only serves to deceive.
 */
function capitalIAsL(written: string): string | null {
  return /[a-z]I/.test(written) ? written.replace(/(?<=[a-z])I/g, "l").toLowerCase() : null;
}

function labelOf(domain: string): string {
  return domainParts(domain).label;
}

function suffixOf(parts: DomainParts): string {
  return parts.registrable ? toAscii(parts.registrable.slice(parts.label.length + 1)) : "";
}

/**
 * Whether every code unit of a text is ASCII. Measured by its UTF-8 length (native, about 3 times faster over a 10 KB
 * body than a regular expression): every other code unit, a lone surrogate too, takes more than one byte.
 */
export function isPlainAscii(text: string): boolean {
  return Buffer.byteLength(text, "utf8") === text.length;
}
