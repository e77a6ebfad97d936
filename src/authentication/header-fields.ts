// The fields of a header section with their byte ranges, found the way mailauth's parser finds them (a line that
// does not start a field continues the one above it), so that the fields read here are the fields it verifies, and
// some can be left out of what it is given.
import { Buffer } from "node:buffer";
import addressparser from "nodemailer/lib/addressparser";
import { BoundedMemo } from "../bounded-memo.js";
import { toAsciiDomain } from "../dns/names.js";

export interface HeaderField {
  /** The field name, lower-cased. */
  readonly name: string;
  /** Byte offsets in the header section, the field's line breaks included. */
  readonly start: number;
  readonly end: number;
}

// RFC 5322 §3.6.8: a field name is printable US-ASCII but the colon, then the colon (obsolete syntax: WSP first).
const FIELD_START = /[\x21-\x39\x3b-\x7e]+[ \t]*:/y;

export function headerFields(header: Buffer): HeaderField[] {
  const text = header.toString("latin1");
  const fields: HeaderField[] = [];
  let open: { name: string; start: number } | undefined;
  let at = 0;
  while (at < text.length) {
    const lf = text.indexOf("\n", at);
    const next = lf < 0 ? text.length : lf + 1;
    // The empty line that ends the section.
    if (next - at <= 2 && /^\r?\n$/.test(text.slice(at, next))) break;
    FIELD_START.lastIndex = at;
    if (FIELD_START.test(text)) {
      if (open) fields.push({ ...open, end: at });
      open = { name: text.slice(at, text.indexOf(":", at)).trim().toLowerCase(), start: at };
    }
    at = next;
  }
  if (open) fields.push({ ...open, end: at });
  return fields;
}

/** A field's value: after the colon, unfolded, trimmed, read as UTF-8 (RFC 6532 allows it in addresses). */
export function fieldValue(header: Buffer, field: HeaderField): string {
  const line = header.toString("utf8", field.start, field.end);
  return line.slice(line.indexOf(":") + 1).replace(/\r?\n(?=[ \t])/g, "").trim();
}

/** The header section without the given fields. */
export function withoutFields(header: Buffer, fields: readonly HeaderField[], drop: ReadonlySet<HeaderField>): Buffer {
  const kept: Buffer[] = [];
  let from = 0;
  for (const field of fields) {
    if (!drop.has(field)) continue;
    kept.push(header.subarray(from, field.start));
    from = field.end;
  }
  kept.push(header.subarray(from));
  return Buffer.concat(kept);
}

/** The d= of a DKIM-Signature field's value (RFC 6376 §3.5), lower-cased; empty when there is none. */
export function signingDomain(value: string): string {
  const match = /(?:^|;)[ \t\r\n]*d[ \t\r\n]*=([^;]*)/.exec(value);
  return (match?.[1] ?? "").replace(/[ \t\r\n]+/g, "").toLowerCase();
}

/** The domains of the addresses in an address-list field (groups' members included), A-labels lower-cased; null for one that is not a domain name. */
export function addressDomains(value: string): readonly (string | null)[] {
  return value.length <= MAX_REMEMBERED_VALUE_CHARS ? rememberedDomains.get(value, parseAddressDomains) : parseAddressDomains(value);
}

/**
 * A sender's From repeats message after message, and parsing it again (addressparser, then IDNA) was a third of
 * the authentication of bench:inbound's message: the domains of field values up to a line's length are kept,
 * bounded in number, so memory stays bounded whatever senders send.
 */
const rememberedDomains = new BoundedMemo<string, readonly (string | null)[]>(1000);
/** RFC 5322 §2.1.1's line limit: a longer value is parsed every time, never kept. */
const MAX_REMEMBERED_VALUE_CHARS = 998;

function parseAddressDomains(value: string): readonly (string | null)[] {
  const domains = addressparser(value, { flatten: true })
    .filter((a) => a.address !== "")
    .map((a) => {
      const domain = a.address.slice(a.address.lastIndexOf("@") + 1);
      const ascii = a.address.includes("@") ? toAsciiDomain(domain) : undefined;
      return ascii?.ok ? ascii.domain : null;
    });
  return Object.freeze(domains);
}
