// Lists of addresses and CIDR ranges an operator configures (SMTP_PROXY_TRUSTED): parsed once, matched per
// connection.
import { BlockList, isIP } from "node:net";
import { normalizeIp } from "../auth/peer-address.js";

/** One entry: an address (a whole /32 or /128) or a network with its prefix length. */
export interface AddressRange {
  readonly network: string;
  readonly prefix: number;
}

/** `10.0.0.0/8, 192.0.2.7, 2001:db8::/32` → the ranges, and the entries that are neither. */
export function parseAddressRanges(list: string): { ranges: AddressRange[]; invalid: string[] } {
  const ranges: AddressRange[] = [];
  const invalid: string[] = [];
  for (const entry of list.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const [network = "", prefixText, ...rest] = entry.split("/");
    const family = isIP(network);
    const width = family === 6 ? 128 : 32;
    const prefix = prefixText === undefined ? width : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
    if (family === 0 || rest.length > 0 || !(prefix >= 0 && prefix <= width)) invalid.push(entry);
    else ranges.push({ network: network.toLowerCase(), prefix });
  }
  return { ranges, invalid };
}

/** Whether an address (as a socket reports it, "::ffff:a.b.c.d" for IPv4 on a dual-stack socket) is in one of the ranges. */
export function rangeMatcher(ranges: readonly AddressRange[]): (address: string | undefined) => boolean {
  const list = new BlockList();
  for (const { network, prefix } of ranges) list.addSubnet(network, prefix, isIP(network) === 6 ? "ipv6" : "ipv4");
  return (address) => {
    const ip = normalizeIp(address);
    const family = isIP(ip);
    return family !== 0 && list.check(ip, family === 6 ? "ipv6" : "ipv4");
  };
}
