// The delivery side of sends held for a person's decision (src/outbound/holds.ts decides what is held and takes the
// decisions). A held submission's delivery workflow starts at once, takes no first-attempt slot, and waits for the
// decision before anything is sent: entering the hold gives the submission its queue id (it is in the hold queue);
// settling it reads what PostgreSQL says (approved, rejected) or, once HOLD_TIMEOUT after the send has passed,
// rejects it as hold_expired, only if it is still held (an approval that came first wins). The workflow's signal only
// wakes it: the row is the decision. The hold reconciler (hold-reconciler.ts) starts what lost its workflow and
// wakes what missed an approval.
import type { SqlPool } from "../../db/database.js";
import { decideHeld, HOLD_EXPIRED, REJECTED } from "../holds.js";
import { queueIdOf } from "./aggregate.js";

/** Where a held submission stands, as its workflow sees it. */
export interface HoldState {
  /** held (still waiting), approved (deliver it), rejected or hold_expired (nothing is sent), gone (deleted). */
  readonly status: "held" | "approved" | typeof REJECTED | typeof HOLD_EXPIRED | "gone";
  readonly heldReason: string | null;
  /** Epoch ms when an undecided hold expires: the send's acceptance plus HOLD_TIMEOUT. */
  readonly deadlineMs: number;
}

export interface HoldOperations {
  /** The submission enters the hold queue (its queue id set) if it is held; answers where it stands. */
  enterHold(submissionId: string): Promise<HoldState>;
  /** Where it stands now; with `expire`, a submission still held is rejected as hold_expired first. */
  settleHold(submissionId: string, expire: boolean): Promise<HoldState>;
}

export function createHoldOperations(sql: SqlPool, holdTimeoutMs: number): HoldOperations {
  const stateOf = async (submissionId: string): Promise<HoldState> => {
    const [row] = await sql.query<{ status: string; failure_code: string | null; held_reason: string | null; created_at_ms: number }>(
      `select status, failure_code, held_reason, (extract(epoch from created_at) * 1000)::float8 as created_at_ms from submissions where id = $1`,
      [submissionId],
    );
    if (!row) return { status: "gone", heldReason: null, deadlineMs: 0 };
    const deadlineMs = Number(row.created_at_ms) + holdTimeoutMs;
    const status = row.status === "held" ? "held" : row.status !== "rejected" ? "approved" : row.failure_code === HOLD_EXPIRED ? HOLD_EXPIRED : REJECTED;
    return { status, heldReason: row.held_reason, deadlineMs };
  };
  return {
    async enterHold(submissionId) {
      await sql.query(`update submissions set queue_id = $2 where id = $1 and status = 'held' and queue_id is null`, [submissionId, queueIdOf(submissionId)]);
      return stateOf(submissionId);
    },
    async settleHold(submissionId, expire) {
      if (expire) await sql.transaction((tx) => decideHeld(tx, { submissionId }, HOLD_EXPIRED, null));
      return stateOf(submissionId);
    },
  };
}

/** A held submission to start a workflow for, with what its static summary tells. */
export interface HeldSubmission {
  readonly submissionId: string;
  readonly organizationId: string;
  readonly inboxId: string | null;
  readonly heldReason: string;
  readonly recipients: number;
}

export type HeldRow = { id: string; organization_id: string; inbox_id: string | null; held_reason: string; recipients: number };

export const heldOf = (r: HeldRow): HeldSubmission => ({
  submissionId: r.id,
  organizationId: r.organization_id,
  inboxId: r.inbox_id,
  heldReason: r.held_reason,
  recipients: r.recipients,
});

/** What a held submission's workflow starts with: it waits for the decision, and its summary says why. */
export function heldStart(h: HeldSubmission) {
  return { submissionId: h.submissionId, organizationId: h.organizationId, inboxId: h.inboxId, held: { reason: h.heldReason, recipients: h.recipients } };
}

export const HELD_COLUMNS = `s.id, s.organization_id, s.inbox_id, s.held_reason,
                      (select count(*) from submission_recipients r where r.submission_id = s.id)::int as recipients`;

/** Of these submissions, those held and not in the hold queue yet (no workflow has entered the hold): to start. */
export async function heldAmong(sql: SqlPool, submissionIds: readonly string[]): Promise<HeldSubmission[]> {
  if (submissionIds.length === 0) return [];
  const rows = await sql.query<HeldRow>(`select ${HELD_COLUMNS} from submissions s where s.id = any($1::uuid[]) and s.status = 'held' and s.queue_id is null`, [
    [...submissionIds],
  ]);
  return rows.map(heldOf);
}
