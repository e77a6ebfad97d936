// The `contacts` table's columns, for every path that writes it: outbound acceptance (the recipients of a send that is
// not held), the approval of a held send, inbound processing (the senders of stored mail); and the one read the hold
// policies make of it. Its purge goes with the inbox's (src/temporal/activities/inbox-purge.ts).
import type { SqlTx } from "../database.js";
import { runPart, unnestInsert, type InsertPart, type TypedColumns } from "./columns.js";

/** A contact as inserted: every column. */
export interface ContactInsert {
  readonly organizationId: string;
  /** Our side: an inbox's address or a /v1/send sender, lower-cased. */
  readonly ownAddress: string;
  /** Their side, normalised (lower-cased, A-label domain). */
  readonly address: string;
  readonly domain: string;
  readonly createdAt: Date;
}

const COLUMNS: TypedColumns<ContactInsert> = [
  ["organization_id", "uuid", (c) => c.organizationId],
  ["own_address", "text", (c) => c.ownAddress],
  ["address", "text", (c) => c.address],
  ["domain", "text", (c) => c.domain],
  ["created_at", "timestamptz", (c) => c.createdAt],
];

/** The contacts' INSERT as a part of a statement (insertTogether); one already known is left as it is. */
export function contactsInsert(contacts: readonly ContactInsert[]): InsertPart[] {
  if (contacts.length === 0) return [];
  const insert = unnestInsert("contacts", COLUMNS, contacts);
  return [(bind) => `${insert(bind)} on conflict do nothing`];
}

/** Inserts the contacts in one statement; those already known are left as they are. */
export async function insertContacts(tx: SqlTx, contacts: readonly ContactInsert[]): Promise<void> {
  const [part] = contactsInsert(contacts);
  if (part) await runPart(tx, part);
}

/** Of these addresses and domains, those `ownAddress` of the organization exchanged mail with (rows of known_address / known_domain). */
export function knownContactsStatement(organizationId: string, ownAddress: string, addresses: readonly string[], domains: readonly string[]) {
  return {
    text: `select coalesce((select array_agg(address) from contacts
                             where organization_id = $1 and own_address = $2 and address = any($3::text[])), '{}') as known_addresses,
                  coalesce((select array_agg(distinct domain) from contacts
                             where organization_id = $1 and own_address = $2 and domain = any($4::text[])), '{}') as known_domains`,
    values: [organizationId, ownAddress, [...addresses], [...domains]],
  };
}
