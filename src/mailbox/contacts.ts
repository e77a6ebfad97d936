// Who each of an organization's own addresses (an inbox's, a /v1/send sender's) exchanged mail with: the senders of
// the mail an inbox stored, the recipients of the mail sent from it that was not held back. The hold policies
// (src/outbound/holds.ts) ask it whether a send is a first contact or goes to a new domain. Addresses are compared
// as outbound recipients are written: normalised by the same parser (lower-cased, IDN domains as A-labels).
import type { ContactInsert } from "../db/tables/contacts.js";
import { parseAddress } from "../validation/syntax.js";

/** The contacts of `ownAddress` for these addresses at `at`; addresses that do not parse as one plain address are left out. */
export function contactsOf(organizationId: string, ownAddress: string, emails: readonly string[], at: Date): ContactInsert[] {
  const contacts = new Map<string, ContactInsert>();
  for (const email of emails) {
    const parsed = parseAddress(email);
    if (!parsed.ok || parsed.isAddressLiteral) continue;
    contacts.set(parsed.normalized, { organizationId, ownAddress: ownAddress.toLowerCase(), address: parsed.normalized, domain: parsed.domain, createdAt: at });
  }
  return [...contacts.values()];
}
