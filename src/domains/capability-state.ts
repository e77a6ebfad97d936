// How a capability's verification state moves with each check (spec, States rule 3): a pass verifies; a definitive
// failure ends it at once; a temporary DNS failure keeps a verified capability until a grace period, counted
// from the first failed check, ends. Pure, so the table of moves is tested without DNS or a clock.
import type { CapabilityRecord } from "../db/entities/customer-domain.js";
import type { Outcome } from "./checks.js";

export type CapabilityStateName = "unverified" | "verified" | "grace" | "failed";

export function initialCapability(): CapabilityRecord {
  return { state: "unverified", lastCheckedAt: null, lastSuccessAt: null, graceUntil: null };
}

/** Whether the capability may be used at `now`; a grace period ends by the clock, whether or not a check ran. */
export function isEnabled(record: CapabilityRecord, now: Date): boolean {
  if (record.state === "verified") return true;
  return record.state === "grace" && record.graceUntil !== null && now.getTime() < Date.parse(record.graceUntil);
}

export function nextCapability(previous: CapabilityRecord, outcome: Outcome, now: Date, graceMs: number): CapabilityRecord {
  const checkedAt = now.toISOString();
  // Once verified and then lost, the state says so; a domain that never verified stays unverified.
  const lost = previous.lastSuccessAt === null ? "unverified" : "failed";
  switch (outcome) {
    case "passed":
      return { state: "verified", lastCheckedAt: checkedAt, lastSuccessAt: checkedAt, graceUntil: null };
    case "failed":
      return { state: lost, lastCheckedAt: checkedAt, lastSuccessAt: previous.lastSuccessAt, graceUntil: null };
    case "temporary": {
      if (!isEnabled(previous, now)) {
        return { state: lost, lastCheckedAt: checkedAt, lastSuccessAt: previous.lastSuccessAt, graceUntil: null };
      }
      const graceUntil = previous.state === "grace" ? previous.graceUntil : new Date(now.getTime() + graceMs).toISOString();
      return { state: "grace", lastCheckedAt: checkedAt, lastSuccessAt: previous.lastSuccessAt, graceUntil };
    }
  }
}

/**
 * When a domain's records are next due for a check: a refresh age after the last check (or the registration),
 * and no later than the end of a running grace period, so that its end is checked when it comes.
 */
export function nextCheckDue(
  domain: { readonly lastCheckedAt: Date | null | undefined; readonly createdAt: Date; readonly inbound: CapabilityRecord; readonly outbound: CapabilityRecord },
  refreshMs: number,
): Date {
  let due = (domain.lastCheckedAt ?? domain.createdAt).getTime() + refreshMs;
  for (const record of [domain.inbound, domain.outbound]) {
    if (record.state === "grace" && record.graceUntil !== null) due = Math.min(due, Date.parse(record.graceUntil));
  }
  return new Date(due);
}
