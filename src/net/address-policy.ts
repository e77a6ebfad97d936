// Which addresses the service connects to on a tenant's behalf: public unicast only, never the service's own
// network. One policy for every outbound connection a tenant can aim: webhook deliveries (src/webhooks/url-policy.ts)
// and the MX hosts of outbound mail (src/outbound/delivery/next-hop.ts).
import { BlockList, isIP } from "node:net";

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

/** Why an IP address is not a public unicast address, or undefined when it is one. */
export function nonPublicReason(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return "not an IP address";
  // Only ranges of the address's own family: BlockList also matches IPv4 addresses against IPv4-embedding IPv6 ranges.
  return BLOCKS.find((block) => block.family === family && block.list.check(address, family === 6 ? "ipv6" : "ipv4"))?.why;
}

/** Hosts (names or IP addresses) that skip the address check: WEBHOOK_ALLOW_HOSTS, DELIVERY_ALLOW_HOSTS (development and tests only). */
export interface AddressPolicy {
  readonly allowHosts: readonly string[];
}

/**
 * Why a connection to `address` is refused, or undefined when it may be made: the address is public, or one of
 * `names` (the lower-case host name it was reached through, the address itself) is exempted by the policy.
 */
export function refusedAddress(policy: AddressPolicy, address: string, names: readonly string[]): string | undefined {
  if (names.some((name) => policy.allowHosts.includes(name))) return undefined;
  return nonPublicReason(address);
}
