// Domain names as mail uses them: IDNs become punycode A-labels (RFC 5890), and what is left must be a host name
// of letters, digits and hyphens (RFC 1123 §2.1) that can carry mail on the public DNS.
import net from "node:net";
import { domainToASCII } from "node:url";

export type AsciiDomain = { readonly ok: true; readonly domain: string } | { readonly ok: false; readonly problem: string };

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
// A TLD is letters (or an IDN A-label): an all-numeric last label would make 1.2.3.4 a "domain".
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/** The lower-case A-label form of a domain name, or why it is not one. One trailing dot is accepted. */
export function toAsciiDomain(input: string): AsciiDomain {
  const name = input.endsWith(".") ? input.slice(0, -1) : input;
  if (name === "") return { ok: false, problem: "the domain is empty" };
  if (net.isIP(name) || name.startsWith("[")) return { ok: false, problem: "an IP address is not a domain name" };
  // WHATWG host parsing applies UTS #46 mapping and punycode; it also turns numeric hosts such as 0x7f.1 into
  // IPv4 addresses, which the second isIP catches.
  const ascii = domainToASCII(name).toLowerCase();
  if (ascii === "") return { ok: false, problem: "the domain is not a valid internationalised domain name" };
  if (net.isIP(ascii)) return { ok: false, problem: "an IP address is not a domain name" };
  if (ascii.length > 253) return { ok: false, problem: "the domain is longer than 253 characters" };
  const labels = ascii.split(".");
  if (labels.length < 2) return { ok: false, problem: "the domain needs at least two labels (a dotless name cannot receive mail)" };
  const bad = labels.find((label) => !LABEL.test(label));
  if (bad !== undefined) {
    return { ok: false, problem: `the label "${bad}" is not 1 to 63 letters, digits and inner hyphens` };
  }
  if (!TLD.test(labels[labels.length - 1]!)) return { ok: false, problem: "the top-level domain is not a name" };
  return { ok: true, domain: ascii };
}

/** Whether name is domain itself or a name below it. */
export function isAtOrBelow(name: string, domain: string): boolean {
  return name === domain || name.endsWith(`.${domain}`);
}
