// Addresses of outbound mail, parsed once by a strict parser: what passes here is exactly what the envelope and
// the headers carry. No display-name syntax, comments, groups or quoted local parts reach nodemailer's own parser,
// so a crafted value can never turn into a second recipient or a header of its own.
import { InvalidRequest } from "../errors.js";
import { NAME_FORBIDDEN } from "../text-rule.js";
import { parseAddress } from "../validation/syntax.js";

export interface OutboundAddress {
  /** The address as sent: ASCII, domain lower-cased (A-labels), local part lower-cased. */
  readonly email: string;
  readonly name?: string;
  /** The domain part, for routing and recipient policy. */
  readonly domain: string;
}

const MAX_NAME_CHARS = 200;

/** Parses one {email, name?} object; `field` names it in the 400 (e.g. `to[2]`). */
export function parseOutboundAddress(input: { email: string; name?: string | undefined }, field: string): OutboundAddress {
  const parsed = parseAddress(input.email);
  if (!parsed.ok) throw new InvalidRequest(`${field}.email is not a valid address: ${parsed.problem}`, "invalid_address");
  if (input.email !== input.email.trim()) throw new InvalidRequest(`${field}.email has surrounding whitespace`, "invalid_address");
  if (parsed.localPart.startsWith('"')) {
    throw new InvalidRequest(`${field}.email has a quoted local part, which is not accepted for sending`, "invalid_address");
  }
  if (parsed.isAddressLiteral) throw new InvalidRequest(`${field}.email uses an address literal, which is not accepted for sending`, "invalid_address");
  if (/[^\x20-\x7e]/.test(parsed.localPart)) {
    throw new InvalidRequest(`${field}.email has a non-ASCII local part, which is not accepted for sending`, "invalid_address");
  }
  const address: { email: string; domain: string; name?: string } = { email: parsed.normalized, domain: parsed.domain };
  if (input.name !== undefined && input.name !== "") {
    if (NAME_FORBIDDEN.test(input.name)) throw new InvalidRequest(`${field}.name contains line breaks or control characters`, "invalid_address");
    if ([...input.name].length > MAX_NAME_CHARS) throw new InvalidRequest(`${field}.name is longer than ${MAX_NAME_CHARS} characters`, "invalid_address");
    address.name = input.name;
  }
  return address;
}

type AddressInput = { email: string; name?: string | undefined };

/** Parses a recipient list, refusing the same address twice (one RCPT per recipient). */
export function parseRecipients(inputs: readonly AddressInput[], field: string, seen = new Set<string>()): OutboundAddress[] {
  return inputs.map((input, i) => {
    const address = parseOutboundAddress(input, `${field}[${i}]`);
    if (seen.has(address.email)) throw new InvalidRequest(`${field}[${i}].email repeats ${address.email}, given once already in to, cc or bcc`, "invalid_address");
    seen.add(address.email);
    return address;
  });
}

/** The recipients of a send by how it addresses them: To and Cc are in the headers, Bcc only in the envelope. */
export interface Recipients {
  readonly to: readonly OutboundAddress[];
  readonly cc: readonly OutboundAddress[];
  readonly bcc: readonly OutboundAddress[];
}

/** Parses to, cc and bcc, each address once in the three together (400 invalid_address naming the repeat). */
export function parseAllRecipients(input: { to: readonly AddressInput[]; cc?: readonly AddressInput[] | undefined; bcc?: readonly AddressInput[] | undefined }): Recipients {
  const seen = new Set<string>();
  return { to: parseRecipients(input.to, "to", seen), cc: parseRecipients(input.cc ?? [], "cc", seen), bcc: parseRecipients(input.bcc ?? [], "bcc", seen) };
}

/** Every recipient, To first, then Cc, then Bcc: the order of the submission's recipients. */
export function everyRecipient(r: Recipients): OutboundAddress[] {
  return [...r.to, ...r.cc, ...r.bcc];
}
