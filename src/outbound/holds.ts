// Sends that wait for a person's decision. The holdFor policy of the sending key (else of its organization) decides
// at acceptance whether a send is held: all, first_contact (a recipient its sending address never exchanged mail
// with), new_domain (a recipient domain it never did); contacts are src/mailbox/contacts.ts. A held submission and its
// recipients are `held`; nothing is sent. PostgreSQL is where the decision lives: approving or rejecting is one
// conditional update of a row still held, so a submission is decided exactly once (and a decision and the hold's
// expiry cannot both win). The delivery workflow waits for it (src/outbound/delivery/holds.ts) and is woken through
// the HoldDecisionNotifier port after the commit.
import type { HoldPolicy, Principal } from "../auth/principal.js";
import type { SqlTx } from "../db/database.js";
import { insertContacts, knownContactsStatement } from "../db/tables/contacts.js";
import type { TenantStore } from "../db/tenant-store.js";
import { Conflict, PermissionDenied } from "../errors.js";
import type { Logger } from "../logger.js";
import { contactsOf } from "../mailbox/contacts.js";
import type { OutboundAddress } from "./addresses.js";
import type { HoldDecisionNotifier } from "./ports.js";
import { getSubmission, readSubmission, type SubmissionView } from "./submissions.js";

/** Why a send was held: the policy that held it. */
export type HoldReason = Exclude<HoldPolicy, "none">;

/** A held submission rejected by a person; one nobody decided within HOLD_TIMEOUT. */
export const REJECTED = "rejected";
export const HOLD_EXPIRED = "hold_expired";

/** Whether `policy` holds a send from `ownAddress` to these recipients, and why; null when it goes out at once. */
export async function holdReasonOf(store: TenantStore, policy: HoldPolicy, ownAddress: string, recipients: readonly OutboundAddress[]): Promise<HoldReason | null> {
  if (policy === "none") return null;
  if (policy === "all") return "all";
  const domains = [...new Set(recipients.map((r) => r.domain))];
  const [known] = await store.sqlRead<{ known_addresses: string[]; known_domains: string[] }>((organizationId) =>
    knownContactsStatement(organizationId, ownAddress.toLowerCase(), recipients.map((r) => r.email), domains),
  );
  if (policy === "first_contact") return recipients.some((r) => !known!.known_addresses.includes(r.email)) ? "first_contact" : null;
  return domains.some((d) => !known!.known_domains.includes(d)) ? "new_domain" : null;
}

/** How a held submission ends: approved (then delivered as any other), rejected by a person, or expired. */
export type HoldOutcome = "approved" | typeof REJECTED | typeof HOLD_EXPIRED;

/**
 * Decides a held submission, once: one statement moves it and its recipients (and its mailbox message) out of held
 * if it still is, and answers whether it did. An approval makes its recipients the sending address's contacts.
 */
export async function decideHeld(
  tx: SqlTx,
  held: { readonly submissionId: string; readonly organizationId?: string },
  outcome: HoldOutcome,
  decidedByKeyId: string | null,
): Promise<boolean> {
  const approved = outcome === "approved";
  const [state, message, failureCode] = approved ? ["pending", "submitted", null] : ["rejected", "rejected", outcome];
  const rows = await tx.query<{ organization_id: string; from_email: string; recipients: string[] }>(
    `with s as (
       update submissions set status = $2, failure_code = $4, decided_at = now(), decided_by_key_id = $5, updated_at = now()
        where id = $1 and status = 'held' ${held.organizationId === undefined ? "" : "and organization_id = $6"}
       returning id, organization_id, message_id, "from"->>'email' as from_email),
     r as (
       update submission_recipients r set status = $2, failure_code = $4, updated_at = now()
         from s where r.submission_id = s.id and r.status = 'held'
       returning r.email),
     m as (
       update messages m set delivery_status = $3, failure_code = $4, updated_at = now() from s where m.id = s.message_id)
     select s.organization_id, s.from_email, coalesce((select array_agg(email) from r), '{}') as recipients from s`,
    [held.submissionId, state, message, failureCode, decidedByKeyId, ...(held.organizationId === undefined ? [] : [held.organizationId])],
  );
  const decided = rows[0];
  if (!decided) return false;
  if (approved) await insertContacts(tx, contactsOf(decided.organization_id, decided.from_email, decided.recipients, new Date()));
  return true;
}

export interface HoldDecisionDeps {
  readonly decisions: HoldDecisionNotifier;
  readonly log: Logger;
}

/**
 * POST /v1/submissions/{id}:approve and :reject. 404 for a submission the key may not see; 403 own_submission for
 * the key that sent it; 409 submission_not_held for one never held, submission_already_decided for one decided (or
 * expired) before. The workflow is told after the commit; should that fail, the hold reconciler tells it again.
 */
export async function decideSubmission(
  deps: HoldDecisionDeps,
  store: TenantStore,
  principal: Principal,
  submissionId: string,
  outcome: "approved" | typeof REJECTED,
): Promise<SubmissionView> {
  const { submission } = await getSubmission(store, principal, submissionId);
  if (submission.createdByKeyId === principal.keyId) {
    throw new PermissionDenied("the key that sent a submission cannot decide it: use a key of the person who approves sends", "own_submission");
  }
  const decided = await store.sqlTransaction((tx) => decideHeld(tx, { submissionId, organizationId: tx.organizationId }, outcome, principal.keyId));
  if (!decided) {
    if (submission.heldReason === null || submission.heldReason === undefined) throw new Conflict("submission_not_held", "the submission was never held for a decision");
    throw new Conflict("submission_already_decided", "the submission was decided already (approved, rejected, or expired after HOLD_TIMEOUT)");
  }
  await deps.decisions
    .decided({ submissionId, organizationId: store.organizationId, inboxId: submission.inboxId ?? null })
    .catch((error: unknown) => deps.log.warn("the held submission's workflow was not told of the decision; the hold reconciler will", { submissionId, error }));
  return (await readSubmission(store, submissionId))!;
}
