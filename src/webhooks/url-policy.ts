// Where webhooks may go: public HTTPS on port 443, never to the service's own network. The URL is checked when an
// endpoint is created (literal addresses) and every address a name resolves to is checked again when a delivery
// connects, so a name that later resolves to a private address (DNS rebinding) is refused too.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { InvalidRequest } from "../errors.js";
import { nonPublicReason, refusedAddress, type AddressPolicy } from "../net/address-policy.js";

export type { AddressPolicy };

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Host names that never name a public host: loopback and names that only resolve inside a site. */
const LOCAL_NAME = /(^|\.)(localhost|local|internal|home\.arpa)$/;

/** A URL's host without IPv6 brackets and trailing dot, lower-cased. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "").toLowerCase();
}

/**
 * Checks a webhook URL and returns its normalised form (WHATWG: lower-case host, no default port, `/` for an
 * empty path), which is what is stored, compared for uniqueness and hashed for idempotency.
 */
export function normalizeWebhookUrl(raw: string, policy: AddressPolicy): string {
  const invalid = (why: string) => new InvalidRequest(`url: ${why}`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid("not a valid URL");
  }
  if (url.protocol !== "https:") throw invalid("must be an https:// URL");
  // The parser drops an empty fragment ("…#") and empty credentials ("https://@host"), so look at the text.
  if (raw.includes("#")) throw invalid("must not have a fragment");
  if (url.username !== "" || url.password !== "" || /^https:\/\/[^/?]*@/i.test(raw)) throw invalid("must not contain credentials");
  if (url.port !== "") throw invalid("must use port 443");
  const host = hostOf(url);
  if (!policy.allowHosts.includes(host)) {
    if (isIP(host)) {
      const why = nonPublicReason(host);
      if (why) throw invalid(`${host} is not a public address (${why})`);
    } else if (!host.includes(".") || LOCAL_NAME.test(host)) {
      throw invalid(`${host} is not a public host name`);
    }
  }
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) throw invalid(`must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  return url.href;
}

export class NonPublicAddressError extends Error {
  constructor(host: string, address: string, why: string) {
    super(`${host} resolves to ${address}, which is not a public address (${why})`);
  }
}

export type ResolveAll = (hostname: string) => Promise<LookupAddress[]>;

const systemResolveAll: ResolveAll = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );

/**
 * A `lookup` for the delivery connection: resolves the name and refuses the connection when any of its addresses
 * is not public, so the address that was checked is the address connected to.
 */
export function createGuardedLookup(policy: AddressPolicy, resolveAll: ResolveAll = systemResolveAll): LookupFunction {
  return (hostname, options, callback) => {
    resolveAll(hostname).then(
      (addresses) => {
        const host = hostname.replace(/\.$/, "").toLowerCase();
        for (const { address } of addresses) {
          const why = refusedAddress(policy, address, [host]);
          if (why) return callback(new NonPublicAddressError(host, address, why), "", 0);
        }
        const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : (options.family ?? 0);
        const usable = addresses.filter((a) => family === 0 || a.family === family);
        if (usable.length === 0) return callback(Object.assign(new Error(`${host} has no usable address`), { code: "ENOTFOUND" }), "", 0);
        if (options.all) return callback(null, usable);
        return callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, "", 0),
    );
  };
}
