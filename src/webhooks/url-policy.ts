// Where webhooks may go: public HTTPS on port 443, never to the service's own network. The URL is checked when an
// endpoint is created (literal addresses) and every address a name resolves to is checked again when a delivery
// connects, so a name that later resolves to a private address (DNS rebinding) is refused too.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { InvalidRequest } from "../errors.js";

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Address ranges that are not public unicast, with the reason a refusal names. IPv6 ranges that embed an IPv4
 * address (mapped, compatible, NAT64, 6to4, Teredo) are refused whole: the embedded address could be anything.
 */
const NON_PUBLIC_RANGES: readonly (readonly [network: string, prefix: number, why: string])[] = [
  ["0.0.0.0", 8, "this-network"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "carrier-grade NAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local (cloud metadata)"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignment"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "6to4 relay"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
  // Azure's metadata and DNS endpoint: a public address that answers only from inside the cloud.
  ["168.63.129.16", 32, "cloud metadata"],
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["::", 96, "IPv4-compatible"],
  ["::ffff:0:0", 96, "IPv4-mapped"],
  ["::ffff:0:0:0", 96, "IPv4-translated"],
  ["64:ff9b::", 96, "NAT64"],
  ["64:ff9b:1::", 48, "NAT64"],
  ["100::", 64, "discard"],
  ["2001::", 32, "Teredo"],
  ["2001:db8::", 32, "documentation"],
  ["2002::", 16, "6to4"],
  ["fc00::", 7, "unique local (private; includes AWS metadata fd00:ec2::254)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"],
];

const BLOCKS = NON_PUBLIC_RANGES.map(([network, prefix, why]) => {
  const family = isIP(network);
  const list = new BlockList();
  list.addSubnet(network, prefix, family === 6 ? "ipv6" : "ipv4");
  return { family, list, why };
});

/** Host names that never name a public host: loopback and names that only resolve inside a site. */
const LOCAL_NAME = /(^|\.)(localhost|local|internal|home\.arpa)$/;

/** Why an IP address is not a public unicast address, or undefined when it is one. */
export function nonPublicReason(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return "not an IP address";
  // Only ranges of the address's own family: BlockList also matches IPv4 addresses against IPv4-embedding IPv6 ranges.
  return BLOCKS.find((block) => block.family === family && block.list.check(address, family === 6 ? "ipv6" : "ipv4"))?.why;
}

/** Which hosts skip the address check (WEBHOOK_ALLOW_HOSTS: development and tests only). */
export interface AddressPolicy {
  readonly allowHosts: readonly string[];
}

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
        if (!policy.allowHosts.includes(host)) {
          for (const { address } of addresses) {
            const why = nonPublicReason(address);
            if (why) return callback(new NonPublicAddressError(host, address, why), "", 0);
          }
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
