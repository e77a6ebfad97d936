// The activity of the domain re-check workflow: checks a domain's records when they are due and says when to
// come back. Idempotent: a check that is not due yet does nothing, and a repeated check only records the same
// observation again.
import type { Database } from "../../db/database.js";
import { CustomerDomain } from "../../db/entities/index.js";
import { nextCheckDue } from "../../domains/capability-state.js";
import type { DomainVerifier } from "../../domains/verifier.js";

/** Never come back sooner than this, so that a clock step cannot make the workflow spin. */
const MIN_WAIT_MS = 1000;

export interface DomainVerificationActivityDeps {
  readonly db: Database;
  readonly verifier: DomainVerifier;
  readonly refreshMs: number;
  readonly now?: () => Date;
}

export function createDomainVerificationActivities(deps: DomainVerificationActivityDeps) {
  const now = deps.now ?? (() => new Date());
  return {
    /** Re-checks the domain if it is due; returns how long to wait for the next check, or null once it is gone. */
    async recheckDomainIfDue(domainId: string): Promise<{ nextCheckInMs: number } | null> {
      let domain = await deps.db.fork().findOne(CustomerDomain, domainId);
      if (!domain) return null;
      if (nextCheckDue(domain, deps.refreshMs) <= now()) {
        const verification = await deps.verifier.verify(domainId);
        if (!verification) return null;
        domain = verification.domain;
      }
      return { nextCheckInMs: Math.max(MIN_WAIT_MS, nextCheckDue(domain, deps.refreshMs).getTime() - now().getTime()) };
    },
  };
}

export type DomainVerificationActivities = ReturnType<typeof createDomainVerificationActivities>;
