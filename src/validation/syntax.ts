// The syntax of an address as an SMTP server accepts it in RCPT TO: the Mailbox of RFC 5321 §4.1.2 with the
// UTF-8 extensions of RFC 6531 §3.3, and the length limits of RFC 5321 §4.5.3.1. Display names, comments and the
// obsolete forms of RFC 5322 are not addresses a mail server accepts, so they are invalid here.
import net from "node:net";
import { toAsciiDomain } from "../dns/names.js";

export type ParsedAddress =
  | {
      readonly ok: true;
      /** The local part as it must be written (quoted only when it has to be), lower-cased. */
      readonly localPart: string;
      /** The domain as A-labels, lower-cased; an address literal keeps its brackets. */
      readonly domain: string;
      readonly isAddressLiteral: boolean;
      readonly normalized: string;
    }
  | { readonly ok: false; readonly problem: string };

// atext of RFC 5322 §3.2.3; RFC 6531 adds every non-ASCII character.
const ATEXT = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~\u0080-\u{10FFFF}]+$/u;
const DOT_STRING = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~\u0080-\u{10FFFF}]+(?:\.[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~\u0080-\u{10FFFF}]+)*$/u;

const MAX_LOCAL_OCTETS = 64;
/** The path limit of 256 octets includes the angle brackets. */
const MAX_ADDRESS_OCTETS = 254;

export function parseAddress(input: string): ParsedAddress {
  const address = input.trim();
  const local = readLocalPart(address);
  if (!local.ok) return local;
  const rest = address.slice(local.end);
  if (!rest.startsWith("@")) return { ok: false, problem: local.quoted ? "a quoted local part must be followed by @" : "the address has no @" };
  const domainPart = rest.slice(1);
  if (Buffer.byteLength(local.text) > MAX_LOCAL_OCTETS) {
    return { ok: false, problem: `the local part is longer than ${MAX_LOCAL_OCTETS} octets` };
  }
  const domain = domainPart.startsWith("[") ? readAddressLiteral(domainPart) : readDomain(domainPart);
  if (!domain.ok) return domain;
  const normalized = `${local.normalized}@${domain.domain}`;
  if (Buffer.byteLength(normalized) > MAX_ADDRESS_OCTETS) {
    return { ok: false, problem: `the address is longer than ${MAX_ADDRESS_OCTETS} octets` };
  }
  return { ok: true, localPart: local.normalized, domain: domain.domain, isAddressLiteral: domain.literal, normalized };
}

type LocalPart =
  | { ok: true; text: string; normalized: string; end: number; quoted: boolean }
  | { ok: false; problem: string };

function readLocalPart(address: string): LocalPart {
  if (address.startsWith('"')) {
    // Quoted-string: qtextSMTP is printable ASCII but " and \ (plus UTF-8); quoted-pairSMTP is \ and one of them.
    let content = "";
    for (let i = 1; i < address.length; i++) {
      const c = address[i]!;
      if (c === '"') {
        if (content === "") return { ok: false, problem: "the local part is empty" };
        const text = address.slice(0, i + 1);
        const lower = content.toLowerCase();
        // RFC 5321 §4.1.2: a quoted local part that is also a dot-string is the same mailbox, written unquoted.
        const normalized = DOT_STRING.test(lower) ? lower : `"${lower.replace(/(["\\])/g, "\\$1")}"`;
        return { ok: true, text, normalized, end: i + 1, quoted: true };
      }
      if (c === "\\") {
        const next = address[i + 1];
        if (next === undefined || !/^[\x20-\x7e]$/.test(next)) return { ok: false, problem: "a backslash in quotes must escape a printable character" };
        content += next;
        i++;
        continue;
      }
      if (/^[\x00-\x1f\x7f]$/.test(c)) return { ok: false, problem: "a quoted local part may not contain control characters" };
      content += c;
    }
    return { ok: false, problem: "the quoted local part is not closed" };
  }
  const at = address.lastIndexOf("@");
  if (at < 0) return { ok: false, problem: "the address has no @" };
  const text = address.slice(0, at);
  if (text === "") return { ok: false, problem: "the local part is empty" };
  if (!DOT_STRING.test(text)) {
    if (text.startsWith(".") || text.endsWith(".") || text.includes("..")) {
      return { ok: false, problem: "the local part has a leading, trailing or double dot" };
    }
    const bad = [...text].find((c) => c !== "." && !ATEXT.test(c));
    return { ok: false, problem: `the local part contains ${JSON.stringify(bad)}, which must be quoted` };
  }
  return { ok: true, text, normalized: text.toLowerCase(), end: at, quoted: false };
}

type DomainPart = { ok: true; domain: string; literal: boolean } | { ok: false; problem: string };

function readDomain(text: string): DomainPart {
  if (text === "") return { ok: false, problem: "the domain is empty" };
  if (text.endsWith(".")) return { ok: false, problem: "the domain ends with a dot" };
  const ascii = toAsciiDomain(text);
  return ascii.ok ? { ok: true, domain: ascii.domain, literal: false } : { ok: false, problem: ascii.problem };
}

/** address-literal of RFC 5321 §4.1.3: [IPv4] or [IPv6:…]; general literals name no address anyone routes to. */
function readAddressLiteral(text: string): DomainPart {
  const inner = /^\[(.*)\]$/.exec(text)?.[1];
  if (inner === undefined) return { ok: false, problem: "the address literal is not closed" };
  if (net.isIPv4(inner)) return { ok: true, domain: `[${inner}]`, literal: true };
  if (/^ipv6:/i.test(inner) && net.isIPv6(inner.slice(5))) return { ok: true, domain: `[IPv6:${inner.slice(5).toLowerCase()}]`, literal: true };
  return { ok: false, problem: "the address literal is not an IPv4 or IPv6 address" };
}
