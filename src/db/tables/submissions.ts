// The `submissions` and `submission_recipients` tables' columns and row mapping, for every path that writes them:
// outbound acceptance and the test fixtures. Delivery changes only their state columns and the delivery queue's
// lease, claim_expires_at, which no insert sets (src/outbound/delivery), and a decision on a held submission its state
// and decision columns (src/outbound/holds.ts).
import type { SqlTx } from "../database.js";
import type { StoredAddress } from "../entities/message.js";
import type { SubmissionRow } from "../entities/submission.js";
import type { SubmissionRecipientRow } from "../entities/submission-recipient.js";
import { insertPart, insertTogether, json, type Columns, type InsertPart } from "./columns.js";

/** A submission as inserted: every column. */
export interface SubmissionInsert {
  readonly id: string;
  readonly organizationId: string;
  /** The sending inbox and its stored message; null for /v1/send. */
  readonly inboxId: string | null;
  readonly messageId: string | null;
  readonly from: StoredAddress;
  readonly subject: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly internetMessageId: string;
  /** The composed message every attempt sends. */
  readonly mime: Buffer;
  readonly status: string;
  readonly queueId: string | null;
  /** The Temporal task queue whose workers deliver it (the accepting deployment's). */
  readonly taskQueue: string | null;
  readonly response: string | null;
  readonly failureCode: string | null;
  /** first_contact, new_domain or all when the send was held for a decision; null otherwise. */
  readonly heldReason: string | null;
  /** The key that sent it (it may never decide a hold). */
  readonly createdByKeyId: string | null;
  readonly decidedAt: Date | null;
  readonly decidedByKeyId: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** A recipient as inserted: every column. */
export interface RecipientInsert {
  readonly id: string;
  readonly organizationId: string;
  readonly submissionId: string;
  /** 0-based, in the order given. */
  readonly position: number;
  readonly email: string;
  readonly name: string | null;
  readonly domain: string;
  /** to, cc or bcc. */
  readonly kind: RecipientKind;
  readonly status: string;
  readonly response: string | null;
  readonly failureCode: string | null;
  readonly attempts: number;
  readonly deliveredAt: Date | null;
  readonly updatedAt: Date;
}

const SUBMISSION_COLUMNS: Columns<SubmissionInsert> = [
  ["id", (s) => s.id],
  ["organization_id", (s) => s.organizationId],
  ["inbox_id", (s) => s.inboxId],
  ["message_id", (s) => s.messageId],
  ["from", (s) => json(s.from)],
  ["subject", (s) => s.subject],
  ["metadata", (s) => json(s.metadata)],
  ["internet_message_id", (s) => s.internetMessageId],
  ["mime", (s) => s.mime],
  ["status", (s) => s.status],
  ["queue_id", (s) => s.queueId],
  ["task_queue", (s) => s.taskQueue],
  ["response", (s) => s.response],
  ["failure_code", (s) => s.failureCode],
  ["held_reason", (s) => s.heldReason],
  ["created_by_key_id", (s) => s.createdByKeyId],
  ["decided_at", (s) => s.decidedAt],
  ["decided_by_key_id", (s) => s.decidedByKeyId],
  ["created_at", (s) => s.createdAt],
  ["updated_at", (s) => s.updatedAt],
];

const RECIPIENT_COLUMNS: Columns<RecipientInsert> = [
  ["id", (r) => r.id],
  ["organization_id", (r) => r.organizationId],
  ["submission_id", (r) => r.submissionId],
  ["position", (r) => r.position],
  ["email", (r) => r.email],
  ["name", (r) => r.name],
  ["domain", (r) => r.domain],
  ["kind", (r) => r.kind],
  ["status", (r) => r.status],
  ["response", (r) => r.response],
  ["failure_code", (r) => r.failureCode],
  ["attempts", (r) => r.attempts],
  ["delivered_at", (r) => r.deliveredAt],
  ["updated_at", (r) => r.updatedAt],
];

export type RecipientKind = "to" | "cc" | "bcc";

type AcceptedSubmission = Omit<
  SubmissionInsert,
  "status" | "queueId" | "response" | "failureCode" | "heldReason" | "createdByKeyId" | "decidedAt" | "decidedByKeyId" | "updatedAt"
> & { readonly createdByKeyId?: string | null };
type AcceptedRecipient = Omit<RecipientInsert, "kind" | "status" | "response" | "failureCode" | "attempts" | "deliveredAt"> & { readonly kind?: RecipientKind };

/**
 * A submission as acceptance inserts it: not queued, no response yet; pending, or held for a decision when
 * `heldReason` is given (its recipients held too: acceptedRecipient).
 */
export function acceptedSubmission(s: AcceptedSubmission, heldReason: string | null = null): SubmissionInsert {
  return {
    ...s,
    status: heldReason === null ? "pending" : "held",
    queueId: null,
    response: null,
    failureCode: null,
    heldReason,
    createdByKeyId: s.createdByKeyId ?? null,
    decidedAt: null,
    decidedByKeyId: null,
    updatedAt: s.createdAt,
  };
}

/** A recipient as acceptance inserts it: never attempted; pending, or held with its submission. */
export function acceptedRecipient(r: AcceptedRecipient, held = false): RecipientInsert {
  return { ...r, kind: r.kind ?? "to", status: held ? "held" : "pending", response: null, failureCode: null, attempts: 0, deliveredAt: null };
}

/** The INSERTs of submissions and their recipients as parts of a statement (insertTogether). */
export function submissionsInsert(submissions: readonly SubmissionInsert[], recipients: readonly RecipientInsert[]): InsertPart[] {
  return [...insertPart("submissions", SUBMISSION_COLUMNS, submissions), ...insertPart("submission_recipients", RECIPIENT_COLUMNS, recipients)];
}

/** Inserts submissions and their recipients in one statement. */
export function insertSubmissions(tx: SqlTx, submissions: readonly SubmissionInsert[], recipients: readonly RecipientInsert[]): Promise<void> {
  return insertTogether(tx, submissionsInsert(submissions, recipients));
}

/** An inserted submission as the entity's row, which the API's mappers read (the organization as its id). */
export function submissionRowOf(s: SubmissionInsert): SubmissionRow {
  const { organizationId, ...rest } = s;
  return { ...rest, metadata: { ...s.metadata }, organization: organizationId } as unknown as SubmissionRow;
}

export function recipientRowOf(r: RecipientInsert): SubmissionRecipientRow {
  const { organizationId, ...rest } = r;
  return { ...rest, organization: organizationId } as unknown as SubmissionRecipientRow;
}
