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

export interface RecipientAdmission {
  readonly admit: AdmitRecipient;
  /** Stops listening for changes. */
  close(): Promise<void>;
}

/** How long an admission is remembered while changes are announced to this process (see below). */
const ANNOUNCED_CACHE_MS = 60_000;
/** How long otherwise: customer domains (whose capability can lapse with time), or while not listening. */
const UNANNOUNCED_CACHE_MS = 1000;
const ADMISSION_CACHE_ENTRIES = 10_000;
/** The channel the database announces admission changes on (migration admission_notify). */
const ADMISSION_CHANGED = "admission_changed";

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
): RecipientAdmission {
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

  // Admissions are remembered, refusals never are. Every change to who may receive (inboxes, organizations) is
  // announced by the database when it commits (a trigger's NOTIFY) and empties the cache, so while this process
  // listens a managed-domain admission is kept for a minute: a busy sender's RCPTs cost no lookup. A customer
  // domain's capability can also lapse with time (the grace period), so its admissions, and all of them while the
  // listening connection is down, are kept for a second only; a delete within that second is no new risk: an inbox
  // can always be deleted between RCPT and the end of DATA, and processing stores nothing for an inbox that is gone.
  const admitted = new Map<string, { admission: Admission; until: number }>();
  let listening = false;
  // Bumped by every change: a lookup that began before one must not cache what it read.
  let generation = 0;
  const forgetAll = () => {
    generation++;
    admitted.clear();
  };
  const listener = db.sql.listen(ADMISSION_CHANGED, {
    notified: forgetAll,
    listening: () => {
      forgetAll();
      listening = true;
    },
    lost: () => {
      listening = false;
      forgetAll();
    },
  });
  const admit: AdmitRecipient = async (address) => {
    const now = Date.now();
    const cached = admitted.get(address);
    if (cached && cached.until > now) return cached.admission;
    const readAt = generation;
    const { admission, onManagedDomain } = await lookUp(address);
    if (admission.kind === "admitted" && readAt === generation) {
      if (admitted.size >= ADMISSION_CACHE_ENTRIES) admitted.delete(admitted.keys().next().value!);
      admitted.delete(address);
      const keepFor = listening && onManagedDomain ? ANNOUNCED_CACHE_MS : UNANNOUNCED_CACHE_MS;
      admitted.set(address, { admission, until: now + keepFor });
    }
    return admission;
  };
  return { admit, close: () => listener.close() };

  async function lookUp(address: string): Promise<{ admission: Admission; onManagedDomain: boolean }> {
    // ARF feedback reports about our outbound mail: admitted, then recorded as complaints, never stored in an inbox.
    if (address === feedbackAddress) {
      return { admission: { kind: "admitted", recipient: { address, inboxId: FEEDBACK_RECIPIENT } }, onManagedDomain: true };
    }
    const at = address.lastIndexOf("@");
    const ascii = toAsciiDomain(address.slice(at + 1));
    if (at <= 0 || !ascii.ok) return { admission: { kind: "foreign_domain" }, onManagedDomain: false };
    const localPart = address.slice(0, at).toLowerCase();
    if (ascii.domain === managedDomain) return { admission: await inboxAt(localPart, ascii.domain, null), onManagedDomain: true };
    const status = await domains.inboundDomainStatus(ascii.domain);
    if (!status) return { admission: { kind: "foreign_domain" }, onManagedDomain: false };
    if (!status.admitted) return { admission: { kind: "domain_not_verified", temporary: status.temporary }, onManagedDomain: false };
    // The inbox must be on the registration that holds the capability, not on another organization's claim.
    return { admission: await inboxAt(localPart, ascii.domain, status.domainId), onManagedDomain: false };
  }
}
