// Who may receive mail: recipient admission by the envelope address (never the To: header). Only active inboxes
// of active organizations are admitted, on the managed domain or on a customer domain whose inbound capability
// holds (spec States rule 3); anything else is refused at RCPT, so the service is never an open relay and never
// stores mail nobody can read.
import type { Database } from "../db/database.js";
import { toAsciiDomain } from "../dns/names.js";
import type { DomainCapabilities } from "../domains/capabilities.js";

export interface AdmittedRecipient {
  /** The envelope address, lower-cased. */
  readonly address: string;
  readonly inboxId: string;
}

export type Admission =
  | { readonly kind: "admitted"; readonly recipient: AdmittedRecipient }
  /** The domain is not one this service receives for: relaying. */
  | { readonly kind: "foreign_domain" }
  /** A customer domain whose inbound capability does not hold; `temporary` when only DNS trouble is to blame. */
  | { readonly kind: "domain_not_verified"; readonly temporary: boolean }
  /** No inbox has this address, or it is deleted. */
  | { readonly kind: "unknown_mailbox" }
  /** The inbox exists but its organization is suspended. */
  | { readonly kind: "mailbox_disabled" };

export type AdmitRecipient = (address: string) => Promise<Admission>;

const ADMISSION_CACHE_MS = 1000;
const ADMISSION_CACHE_ENTRIES = 10_000;

/**
 * The inboxId of a message's recipient that is the feedback address (FEEDBACK_ADDRESS): it has no inbox, and
 * processing hands such a message to the feedback reports (src/outbound/feedback-reports.ts) instead.
 */
export const FEEDBACK_RECIPIENT = "feedback-reports";

/** The customer domains side of admission (src/domains): undefined when no organization registered the domain. */
export type InboundDomains = Pick<DomainCapabilities, "inboundDomainStatus">;

export function createRecipientAdmission(
  db: Database,
  managedDomain: string,
  domains: InboundDomains,
  feedbackAddress?: string,
): AdmitRecipient {
  async function inboxAt(localPart: string, domain: string, domainId: string | null): Promise<Admission> {
    const address = `${localPart}@${domain}`;
    const [inbox] = await db.sql.query<{ id: string; status: string; domain_id: string | null; organization_status: string }>(
      `select i.id, i.status, i.domain_id, o.status as organization_status
         from inboxes i join organizations o on o.id = i.organization_id where i.address = $1`,
      [address],
    );
    if (!inbox || inbox.status !== "active" || inbox.domain_id !== domainId) return { kind: "unknown_mailbox" };
    if (inbox.organization_status !== "active") return { kind: "mailbox_disabled" };
    return { kind: "admitted", recipient: { address, inboxId: inbox.id } };
  }

  // Admissions are remembered for a second: a busy sender's RCPTs to one inbox cost one lookup per second, not
  // one per message. Refusals are never remembered, and a delete within that second is no new risk: an inbox can
  // always be deleted between RCPT and the end of DATA, and processing stores nothing for an inbox that is gone.
  const admitted = new Map<string, { admission: Admission; until: number }>();
  const admit: AdmitRecipient = async (address) => {
    const now = Date.now();
    const cached = admitted.get(address);
    if (cached && cached.until > now) return cached.admission;
    const admission = await lookUp(address);
    if (admission.kind === "admitted") {
      if (admitted.size >= ADMISSION_CACHE_ENTRIES) admitted.delete(admitted.keys().next().value!);
      admitted.delete(address);
      admitted.set(address, { admission, until: now + ADMISSION_CACHE_MS });
    }
    return admission;
  };
  return admit;

  async function lookUp(address: string): Promise<Admission> {
    // ARF feedback reports about our outbound mail: admitted, then recorded as complaints, never stored in an inbox.
    if (address === feedbackAddress) return { kind: "admitted", recipient: { address, inboxId: FEEDBACK_RECIPIENT } };
    const at = address.lastIndexOf("@");
    const ascii = toAsciiDomain(address.slice(at + 1));
    if (at <= 0 || !ascii.ok) return { kind: "foreign_domain" };
    const localPart = address.slice(0, at).toLowerCase();
    if (ascii.domain === managedDomain) return inboxAt(localPart, ascii.domain, null);
    const status = await domains.inboundDomainStatus(ascii.domain);
    if (!status) return { kind: "foreign_domain" };
    if (!status.admitted) return { kind: "domain_not_verified", temporary: status.temporary };
    // The inbox must be on the registration that holds the capability, not on another organization's claim.
    return inboxAt(localPart, ascii.domain, status.domainId);
  }
}
