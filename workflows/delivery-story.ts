// What a delivery workflow tells an operator in the Temporal UI beyond its static summary: while held, that it waits
// for approval and until when; then how the hold ended; while delivering, each recipient's latest outcome counted by
// status (never an address: the details show in lists). And the wait itself for a held send: woken by the holdDecided
// signal when a person decides, else at the hold's deadline; what was decided is read from PostgreSQL each time
// (src/outbound/delivery/holds.ts), the signal only wakes.
import { condition, defineSignal, proxyLocalActivities, setCurrentDetails, setHandler } from "@temporalio/workflow";
import type { HoldActivities } from "../src/temporal/activities/delivery-holds.js";
import type { DomainAttemptResult, HoldState } from "./types.js";

/** Sent when a person approved or rejected the submission (src/temporal/client.ts: HOLD_DECIDED_SIGNAL). */
export const holdDecided = defineSignal("holdDecided");

/** Failures of our own side only (database down): reading and settling a hold are idempotent. */
const holds = proxyLocalActivities<HoldActivities>({
  startToCloseTimeout: "1m",
  retry: { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "1m" },
});

/**
 * Waits while the submission is held; answers how the hold ended (approved: deliver it). Each wake-up (a signal, or
 * the deadline) settles the hold once: a signal that finds it still held waits again for what is left.
 */
export async function awaitHoldDecision(submissionId: string): Promise<HoldState["status"]> {
  let woken = false;
  setHandler(holdDecided, () => {
    woken = true;
  });
  let state = await holds.enterHold(submissionId);
  while (state.status === "held") {
    setCurrentDetails(`**Waiting for approval** (held: ${state.heldReason ?? "?"}) until ${new Date(state.deadlineMs).toISOString()}`);
    const heard = await condition(() => woken, Math.max(1, state.deadlineMs - Date.now()));
    woken = false;
    state = await holds.settleHold({ submissionId, expire: !heard && Date.now() >= state.deadlineMs });
  }
  setCurrentDetails(HOLD_ENDED[state.status]);
  return state.status;
}

const HOLD_ENDED: Readonly<Record<HoldState["status"], string>> = {
  held: "",
  approved: "**Approved**: delivering",
  rejected: "**Rejected** by a person: nothing was sent",
  hold_expired: "**Hold expired**: nobody decided within HOLD_TIMEOUT; nothing was sent",
  gone: "The submission was deleted while held: nothing was sent",
};

/** Each recipient's latest outcome in this run, told in the current details as counts by status. */
export class DeliveryStory {
  private readonly latest = new Map<string, string>();

  /** Takes an attempt's result in: the details show the counts after it. */
  attempted(result: DomainAttemptResult): void {
    for (const r of result.recipients ?? []) this.latest.set(r.email, r.status);
    const counts = this.counts();
    const told = Object.entries(counts).map(([status, n]) => `${n} ${status}`);
    if (told.length > 0) setCurrentDetails(`Recipients attempted: ${told.join(", ")}`);
  }

  counts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const status of this.latest.values()) counts[status] = (counts[status] ?? 0) + 1;
    return counts;
  }
}
