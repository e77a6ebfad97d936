// The `complaints` table's columns, for every path that writes it: feedback reports (src/outbound/feedback-reports.ts).
// One complaint per submission and recipient: a report sent again, or replayed, adds nothing.
import type { SqlTx } from "../database.js";
import { insertPart, runPart, type Columns } from "./columns.js";

/** A complaint as inserted: every column. */
export interface ComplaintInsert {
  readonly id: string;
  readonly organizationId: string;
  readonly email: string;
  /** The ARF Feedback-Type (abuse, fraud, …). */
  readonly feedbackType: string;
  readonly submissionId: string;
  readonly userAgent: string | null;
  readonly createdAt: Date;
}

const COLUMNS: Columns<ComplaintInsert> = [
  ["id", (c) => c.id],
  ["organization_id", (c) => c.organizationId],
  ["email", (c) => c.email],
  ["feedback_type", (c) => c.feedbackType],
  ["submission_id", (c) => c.submissionId],
  ["user_agent", (c) => c.userAgent],
  ["created_at", (c) => c.createdAt],
];

/** Inserts the complaint unless its submission and recipient have one already; whether it was new. */
export async function insertComplaint(tx: SqlTx, complaint: ComplaintInsert): Promise<boolean> {
  const [part] = insertPart("complaints", COLUMNS, [complaint]);
  const inserted = await runPart(tx, part!, "on conflict (submission_id, email) do nothing returning id");
  return inserted.length > 0;
}
