// The caller's socket address as authentication compares and counts it.
import { isIPv6 } from "node:net";

/** "::ffff:127.0.0.1" (an IPv4 peer on a dual-stack socket) is compared as "127.0.0.1". */
export function normalizeIp(address: string | undefined): string {
  if (address === undefined) return "";
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/** The unit one client controls: an IPv4 address, or an IPv6 /64 (a single host is usually given a whole /64). */
export function peerKey(address: string | undefined): string {
  const ip = normalizeIp(address).split("%", 1)[0]!;
  if (!isIPv6(ip)) return ip;
  const [head = "", tail = ""] = ip.split("::", 2);
  const left = head === "" ? [] : head.split(":");
  const right = !ip.includes("::") || tail === "" ? [] : tail.split(":");
  // A trailing dotted IPv4 part stands for two groups.
  const width = (groups: string[]) => groups.length + (groups.at(-1)?.includes(".") ? 1 : 0);
  const groups = [...left, ...Array<string>(Math.max(0, 8 - width(left) - width(right))).fill("0"), ...right];
  return `${groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, "")).join(":")}::/64`;
}
