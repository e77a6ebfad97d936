// The aggregate status of a submission from its recipients' states (spec States rules 1-2), and what the mailbox
// message shows for it. Pure, table-tested in test/unit/delivery-aggregate.test.ts.

export type RecipientStatus = "pending" | "queued" | "deferred" | "delivered" | "bounced" | "failed";
export type SubmissionStatus = "pending" | "queued" | "deferred" | "delivered" | "partially_delivered" | "failed";

/** A recipient's state that never changes again. */
export function isFinalRecipientStatus(status: string): boolean {
  return status === "delivered" || status === "bounced" || status === "failed";
}

/**
 * All delivered → delivered; some delivered → partially_delivered (whatever the others are); none delivered: any
 * deferred → deferred, else any queued → queued, else any pending → pending, else (all bounced or failed) → failed.
 * A submission without recipients (never accepted so) stays pending.
 */
export function aggregateStatus(statuses: readonly string[]): SubmissionStatus {
  if (statuses.length === 0) return "pending";
  const delivered = statuses.filter((s) => s === "delivered").length;
  if (delivered === statuses.length) return "delivered";
  if (delivered > 0) return "partially_delivered";
  if (statuses.includes("deferred")) return "deferred";
  if (statuses.includes("queued")) return "queued";
  if (statuses.includes("pending")) return "pending";
  return "failed";
}

/** The mailbox message's delivery status: `submitted` while its submission is pending, then the aggregate. */
export function messageDeliveryStatus(submission: SubmissionStatus): string {
  return submission === "pending" ? "submitted" : submission;
}

/** The queue id users see (like Postfix's): the submission id's hex digits, upper-case; stable across attempts. */
export function queueIdOf(submissionId: string): string {
  return submissionId.replace(/-/g, "").toUpperCase();
}
