// Where a link really goes. Link-protection services wrap the target in their own URL and say it in the URL
// (Microsoft Safe Links, Proofpoint, Mimecast, Barracuda, Sophos, Trend Micro, Trellix, Cisco, Symantec, Google's
// and Facebook's redirectors): those are unwrapped. Mail senders' click trackers (SendGrid, Mailchimp, Amazon SES …)
// say nothing of the target: a link through one cannot be compared with its text, and is not reported as a
// mismatch (its domain still is checked). So is a Mimecast link that does not show its target's domain.
import { Buffer } from "node:buffer";
import { MAX_URL_CHARS } from "./limits.js";
import { parseHttpUrl } from "./links.js";

/** Registrable domains of click trackers whose URLs do not show the target. */
const OPAQUE_TRACKERS = new Set([
  "sendgrid.net", "list-manage.com", "mailchimp.com", "mailchi.mp", "mandrillapp.com", "mailgun.org", "mailgun.net",
  "sparkpostmail.com", "hubspotlinks.com", "hubspotemail.net", "hs-sites.com", "rs6.net", "exacttarget.com",
  "exct.net", "createsend1.com", "cmail19.com", "cmail20.com", "klclick.com", "klclick1.com", "klclick2.com",
  "klclick3.com", "mjt.lu", "sendibt2.com", "sendibt3.com", "sendibm1.com", "convertkit-mail.com",
  "convertkit-mail2.com", "ck.page", "substack.com", "beehiiv.com", "mlsend.com", "mlsend2.com", "customeriomail.com",
  "customer.io", "pstmrk.it", "awstrack.me", "pardot.com", "mktoweb.com", "mkto-ab.com", "en25.com", "iterable.com",
  "braze.com", "intercom-clicks.com", "intercom-mail.com", "mcsv.net", "ctctcdn.com", "emltrk.com", "sailthru.com",
  "e2ma.net", "cmail1.com", "mailerlite.com", "aweber.com", "getresponse.com", "activehosted.com", "mimecast.com",
  "mimecastprotect.com",
]);
/** A network's own link shortener, opaque like a tracker in that network's own mail (and a shortener elsewhere). */
const OWN_SHORTENERS = new Map([
  ["t.co", ["twitter.com", "x.com"]],
  ["lnkd.in", ["linkedin.com"]],
]);

/** Short domains of a brand's own (the text names the brand's main domain, the link its short one). */
const SHORT_DOMAINS = new Map([
  ["youtu.be", "youtube.com"], ["x.com", "twitter.com"], ["goo.gl", "google.com"], ["g.co", "google.com"],
  ["fb.me", "facebook.com"], ["amzn.to", "amazon.com"], ["a.co", "amazon.com"], ["msft.it", "microsoft.com"],
  ["aka.ms", "microsoft.com"], ["spoti.fi", "spotify.com"], ["redd.it", "reddit.com"], ["wa.me", "whatsapp.com"],
  ["apple.co", "apple.com"], ["db.tt", "dropbox.com"],
]);

/** Whether a link through `registrable` hides its target, in mail from `sender` (a registrable domain, or null). */
export function isOpaqueTracker(registrable: string, sender: string | null): boolean {
  return OPAQUE_TRACKERS.has(registrable) || (sender !== null && (OWN_SHORTENERS.get(registrable)?.includes(sender) ?? false));
}

/** The main domain a brand's short domain stands for, or the domain itself. */
export function mainDomain(registrable: string): string {
  return SHORT_DOMAINS.get(registrable) ?? registrable;
}

/** Where a link goes: its target, and whether only the target's host is known (a wrapper that shows no more). */
export interface Unwrapped {
  readonly url: URL;
  readonly hostOnly: boolean;
}

/**
 * The target a link-protection URL wraps, or the URL itself. A wrapper inside a wrapper (Proofpoint over Safe
 * Links) is unwrapped too, up to MAX_WRAPPERS levels.
 */
export function unwrapRedirect(url: URL): Unwrapped {
  let current: Unwrapped = { url, hostOnly: false };
  for (let level = 0; level < MAX_WRAPPERS; level++) {
    const inner = wrappedTarget(current.url);
    const next = inner ? parseHttpUrl(inner.href) : null;
    if (!next) break;
    current = { url: next, hostOnly: inner!.hostOnly };
  }
  return current;
}

/** Wrappers unwrapped in one link: a gateway's over a forwarder's over a redirector's is already rare. */
const MAX_WRAPPERS = 3;

/**
 * Link-protection services and redirectors that say where they lead, by host: what each wrapped URL carries (from
 * the services' rewritten links as they appear in mail, and the decoders security teams keep for them).
 */
interface Wrapper {
  readonly host: (host: string) => boolean;
  readonly target: (url: URL) => Target | null;
}

/** What a wrapper says of its target: the URL, or (`hostOnly`) a URL of the target's host. */
interface Target {
  readonly href: string;
  readonly hostOnly: boolean;
}

function whole(href: string | null): Target | null {
  return href ? { href, hostOnly: false } : null;
}

const WRAPPERS: readonly Wrapper[] = [
  // Microsoft Defender Safe Links: https://eur01.safelinks.protection.outlook.com/?url=<target>&data=…
  { host: (h) => h.endsWith(".safelinks.protection.outlook.com"), target: (u) => whole(u.searchParams.get("url")) },
  // Proofpoint URL Defense v3: https://urldefense.com/v3/__<target>__;<replaced characters>!!…
  { host: (h) => h === "urldefense.com" || h === "urldefense.us", target: (u) => whole(proofpointV3(u)) },
  // Proofpoint URL Defense v2 (https://urldefense.proofpoint.com/v2/url?u=https-3A__host_path&d=…) and v1 (?u=<target>).
  { host: (h) => h === "urldefense.proofpoint.com", target: (u) => whole(proofpointV1V2(u)) },
  // Mimecast URL Protect: https://protect-eu.mimecast.com/s/<id>?domain=<target's domain>, and since 2024
  // https://url.uk.m.mimecastprotect.com/s/<id>?domain=…; the domain is there only when the gateway is set to show
  // it, and a link without it stays opaque.
  {
    host: (h) => h.endsWith(".mimecastprotect.com") || (h.startsWith("protect") && h.endsWith(".mimecast.com")),
    target: (u) => domainOnly(u.pathname.startsWith("/s/") ? u.searchParams.get("domain") : null),
  },
  // Barracuda Link Protection: https://linkprotect.cudasvc.com/url?a=<target>&c=E,1,…
  { host: (h) => h === "linkprotect.cudasvc.com" || h.endsWith(".linkprotect.cudasvc.com"), target: (u) => whole(u.searchParams.get("a")) },
  // Sophos Email: https://eu-central-1.protection.sophos.com?d=<domain>&u=<target in base64>&…
  {
    host: (h) => h.endsWith(".protection.sophos.com"),
    target: (u) => whole(fromBase64Url(u.searchParams.get("u"))) ?? domainOnly(u.searchParams.get("d")),
  },
  // Trend Micro Email Security: https://<x>.ctp.trendmicro.com/wis/clicktime/v1/query?url=<target>&umid=…
  { host: (h) => h.endsWith("ctp.trendmicro.com"), target: (u) => whole(u.searchParams.get("url")) },
  // Trellix (FireEye) Email Security: https://protect2.fireeye.com/v1/url?k=…&u=<target>
  { host: (h) => h === "protect2.fireeye.com", target: (u) => whole(u.searchParams.get("u")) },
  // Cisco Secure Email: https://secure-web.cisco.com/<token>/<target, percent-encoded>
  { host: (h) => h === "secure-web.cisco.com", target: (u) => whole(ciscoSecureWeb(u)) },
  // Symantec (Broadcom) Email Security.cloud: https://clicktime.symantec.com/<token>?u=<target>
  { host: (h) => h === "clicktime.symantec.com", target: (u) => whole(u.searchParams.get("u")) },
  // Google's and Facebook's redirectors.
  {
    host: (h) => h === "www.google.com" || h === "google.com",
    target: (u) => whole(u.pathname === "/url" ? (u.searchParams.get("q") ?? u.searchParams.get("url")) : null),
  },
  {
    host: (h) => h === "l.facebook.com" || h === "lm.facebook.com",
    target: (u) => whole(u.pathname === "/l.php" ? u.searchParams.get("u") : null),
  },
];

function wrappedTarget(url: URL): Target | null {
  const host = url.hostname;
  for (const wrapper of WRAPPERS) if (wrapper.host(host)) return wrapper.target(url);
  return null;
}

function proofpointV3(url: URL): string | null {
  if (!url.pathname.startsWith("/v3/__")) return null;
  const path = url.href.slice(url.href.indexOf("/v3/__") + 6);
  const end = path.indexOf("__;");
  return end >= 0 ? path.slice(0, end) : null;
}

function proofpointV1V2(url: URL): string | null {
  const u = url.searchParams.get("u");
  if (!u) return null;
  if (url.pathname.startsWith("/v1/url")) return u;
  if (!url.pathname.startsWith("/v2/url")) return null;
  // v2 writes "%" as "-" and "/" as "_".
  return decodeSafely(u.replace(/-([0-9A-Fa-f]{2})/g, "%$1").replace(/_/g, "/"));
}

function ciscoSecureWeb(url: URL): string | null {
  // The target is everything after the token, percent-encoded ("https%3A%2F%2Fhost%2Fpath").
  const slash = url.pathname.indexOf("/", 1);
  return slash < 0 ? null : decodeSafely(url.pathname.slice(slash + 1));
}

/** A wrapper that only says the target's domain: a URL of that domain, when it is a domain name. */
function domainOnly(domain: string | null): Target | null {
  const name = domain?.trim().toLowerCase() ?? "";
  return /^[a-z0-9.-]{1,253}$/.test(name) && name.includes(".") ? { href: `https://${name}/`, hostOnly: true } : null;
}

/** A URL written in base64 (standard or URL-safe alphabet), or null when it is not one. */
function fromBase64Url(value: string | null): string | null {
  if (!value || value.length > MAX_URL_CHARS * 2 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) return null;
  const decoded = Buffer.from(value, "base64").toString("utf8");
  return /^https?:\/\//i.test(decoded) ? decoded : null;
}

function decodeSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // A malformed escape: the URL parser decides what the rest is.
  }
}
