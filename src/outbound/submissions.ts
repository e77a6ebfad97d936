// Submissions as the API reads them: one with its recipients (GET /v1/submissions/{id}), and the organization's list,
// newest first, optionally by state (GET /v1/submissions?status=held is the queue of sends waiting for a decision).
// A key restricted to inboxes sees only its inboxes' submissions, never those of /v1/send.
import type { Principal } from "../auth/principal.js";
import { canAccessInbox } from "../auth/principal.js";
import { Submission, SubmissionRecipient } from "../db/entities/index.js";
import type { SubmissionRow } from "../db/entities/submission.js";
import type { SubmissionRecipientRow } from "../db/entities/submission-recipient.js";
import type { TenantStore } from "../db/tenant-store.js";
import { NotFound } from "../errors.js";
import type { CursorCodec } from "../pagination/cursor.js";
import { newestFirstPage, type Page, type PageRequest } from "../pagination/keyset.js";

export interface SubmissionView {
  readonly submission: SubmissionRow;
  readonly recipients: readonly SubmissionRecipientRow[];
}

/** A submission with its recipients, read in one snapshot (the delivery writes both in one transaction). */
export async function readSubmission(store: TenantStore, submissionId: string): Promise<SubmissionView | null> {
  return store.readSnapshot(async (snapshot) => {
    const submission = await snapshot.findOne(Submission, { id: submissionId });
    if (!submission) return null;
    const recipients = await snapshot.find(SubmissionRecipient, { submissionId }, { orderBy: { position: "asc" } });
    return { submission, recipients };
  });
}

/** Whether the key may see the submission: any, or for a key restricted to inboxes one of its inboxes' sends. */
function mayRead(principal: Principal, submission: Pick<SubmissionRow, "inboxId">): boolean {
  const inboxId = submission.inboxId;
  return principal.inboxIds === null || (inboxId !== null && inboxId !== undefined && canAccessInbox(principal, inboxId));
}

/** GET /v1/submissions/{id}: 404 for one the key may not see. */
export async function getSubmission(store: TenantStore, principal: Principal, submissionId: string): Promise<SubmissionView> {
  const view = await readSubmission(store, submissionId);
  if (!view || !mayRead(principal, view.submission)) throw new NotFound("submission");
  return view;
}

/** GET /v1/submissions: one page, newest first; the cursor is bound to the state asked for. */
export async function listSubmissions(
  deps: { readonly cursors: CursorCodec },
  store: TenantStore,
  principal: Principal,
  request: PageRequest & { readonly status?: string | undefined },
): Promise<Page<SubmissionView>> {
  const where = {
    ...(request.status === undefined ? {} : { status: request.status }),
    ...(principal.inboxIds === null ? {} : { inboxId: { $in: [...principal.inboxIds] } }),
  };
  const { page, recipients } = await store.readSnapshot(async (snapshot) => {
    const page = await newestFirstPage(snapshot, deps.cursors, { entity: Submission, resource: `submissions:${request.status ?? "*"}`, where }, request);
    const ids = page.items.map((s) => s.id);
    const recipients = ids.length === 0 ? [] : await snapshot.find(SubmissionRecipient, { submissionId: { $in: ids } }, { orderBy: { position: "asc" } });
    return { page, recipients };
  });
  const bySubmission = new Map<string, SubmissionRecipientRow[]>();
  for (const r of recipients) bySubmission.set(r.submissionId, [...(bySubmission.get(r.submissionId) ?? []), r]);
  return { items: page.items.map((submission) => ({ submission, recipients: bySubmission.get(submission.id) ?? [] })), nextCursor: page.nextCursor };
}
