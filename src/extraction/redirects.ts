// Where a link really goes. Link-protection services wrap the target in their own URL and say it in the URL
// (Microsoft Safe Links, Proofpoint URL Defense, Google's and Facebook's redirectors): those are unwrapped, one
// level. Mail senders' click trackers (SendGrid, Mailchimp, Amazon SES …) say nothing of the target: a link
// through one cannot be compared with its text, and is not reported as a mismatch (its domain still is checked).
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

/** The target a link-protection URL wraps, or the URL itself. */
export function unwrapRedirect(url: URL): URL {
  const host = url.hostname;
  let inner: string | null = null;
  if (host.endsWith(".safelinks.protection.outlook.com")) {
    inner = url.searchParams.get("url");
  } else if (host === "urldefense.com" && url.pathname.startsWith("/v3/__")) {
    const path = url.href.slice(url.href.indexOf("/v3/__") + 6);
    const end = path.indexOf("__;");
    inner = end >= 0 ? path.slice(0, end) : null;
  } else if (host === "urldefense.proofpoint.com" && url.pathname.startsWith("/v2/url")) {
    const u = url.searchParams.get("u");
    inner = u ? u.replace(/-([0-9A-Fa-f]{2})/g, "%$1").replace(/_/g, "/") : null;
    if (inner) inner = decodeSafely(inner);
  } else if ((host === "www.google.com" || host === "google.com") && url.pathname === "/url") {
    inner = url.searchParams.get("q") ?? url.searchParams.get("url");
  } else if ((host === "l.facebook.com" || host === "lm.facebook.com") && url.pathname === "/l.php") {
    inner = url.searchParams.get("u");
  }
  return (inner ? parseHttpUrl(inner) : null) ?? url;
}

function decodeSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // A malformed escape: the URL parser decides what the rest is.
  }
}
