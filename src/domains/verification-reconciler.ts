// Starts the re-check workflow of verified-once domains that have none: a verify whose workflow start failed
// (Temporal down, the process killed between the check and the start), or a run that ended without the domain
// ending. A running workflow checks its domain when it is due, so a domain whose check is overdue by more than
// OVERDUE_MS has no workflow checking it; starts are idempotent by workflow id, so one that is only late is left be.
import type { Database } from "../db/database.js";
import type { CapabilityRecord } from "../db/entities/customer-domain.js";
import { nextCheckDue } from "./capability-state.js";
import type { Reconciler } from "../jobs/periodic-jobs.js";
import type { DomainVerificationStarter } from "./domains.js";

/** Longer than a due check takes to run (its DNS lookups time out within seconds), shorter than a round or two. */
const OVERDUE_MS = 60_000;
const BATCH = 1000;

interface CheckedDomain {
  readonly id: string;
  readonly organization_id: string;
  readonly last_checked_at: Date;
  readonly created_at: Date;
  readonly inbound: CapabilityRecord;
  readonly outbound: CapabilityRecord;
}

/** Domains whose re-check is overdue by more than OVERDUE_MS at `now()`. */
export function domainVerificationReconciler(
  db: Database,
  workflows: DomainVerificationStarter,
  refreshMs: number,
  now: () => Date = () => new Date(),
): Reconciler<{ id: string; organizationId: string }> {
  return {
    name: "domain verification",
    async stranded() {
      const overdueBefore = now().getTime() - OVERDUE_MS;
      // Every domain a verify has checked; the refresh age and running grace periods (nextCheckDue) pick the overdue.
      const candidates = await db.sql.query<CheckedDomain>(
        `select id, organization_id, last_checked_at, created_at, inbound, outbound from customer_domains
          where last_checked_at < $1 or (last_checked_at is not null and 'grace' in (inbound->>'state', outbound->>'state'))
          order by last_checked_at limit $2`,
        [new Date(overdueBefore - refreshMs), BATCH],
      );
      return candidates
        .filter(
          (d) =>
            nextCheckDue({ lastCheckedAt: d.last_checked_at, createdAt: d.created_at, inbound: d.inbound, outbound: d.outbound }, refreshMs).getTime() <
            overdueBefore,
        )
        .map((d) => ({ id: d.id, organizationId: d.organization_id }));
    },
    start: (domain) => workflows.start(domain),
  };
}
