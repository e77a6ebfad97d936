// Who may receive mail: recipient admission by the envelope address (never the To: header). Only active inboxes
// of active organizations on a domain this service receives for are admitted; anything else is refused at RCPT,
// so the service is never an open relay and never stores mail nobody can read.
import type { Database } from "../db/database.js";
import { Inbox } from "../db/entities/index.js";

export interface AdmittedRecipient {
  /** The envelope address, lower-cased. */
  readonly address: string;
  readonly inboxId: string;
}

export type Admission =
  | { readonly kind: "admitted"; readonly recipient: AdmittedRecipient }
  /** The domain is not one this service receives for: relaying. */
  | { readonly kind: "foreign_domain" }
  /** No inbox has this address, or it is deleted. */
  | { readonly kind: "unknown_mailbox" }
  /** The inbox exists but its organization is suspended. */
  | { readonly kind: "mailbox_disabled" };

export type AdmitRecipient = (address: string) => Promise<Admission>;

export function createRecipientAdmission(db: Database, managedDomain: string): AdmitRecipient {
  return async (address) => {
    const normalized = address.toLowerCase();
    const at = normalized.lastIndexOf("@");
    const domain = normalized.slice(at + 1).replace(/\.$/, "");
    // Customer domains join here once the domains feature verifies their inbound capability (spec rule 3).
    if (at <= 0 || domain !== managedDomain) return { kind: "foreign_domain" };
    const inbox = await db
      .fork()
      .findOne(Inbox, { address: `${normalized.slice(0, at)}@${domain}` }, { populate: ["organization"], fields: ["id", "status", "organization.status"] });
    if (!inbox || inbox.status !== "active") return { kind: "unknown_mailbox" };
    if (inbox.organization.status !== "active") return { kind: "mailbox_disabled" };
    return { kind: "admitted", recipient: { address: normalized, inboxId: inbox.id } };
  };
}
