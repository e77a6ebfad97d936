// Keeps a customer domain's verification current: re-checks its records every refresh age (sooner when a grace
// period ends first), for as long as the domain exists. One per domain, id domain/<domainId>; the schedule lives
// in the activity (it reads the last check and the configured refresh age), so the workflow only waits.
import { continueAsNew, proxyActivities, sleep } from "@temporalio/workflow";
import type { DomainVerificationActivities } from "../src/temporal/activities/domain-verification.js";
import type { DomainVerificationArgs } from "./types.js";

/** A failed check (database down) is retried with backoff; DNS failures are outcomes, not activity failures. */
const RECHECK_RETRY = { initialInterval: "5s", backoffCoefficient: 2, maximumInterval: "5m" } as const;
/** Checks per run before continue-as-new keeps the history short. */
const CHECKS_PER_RUN = 100;

const activities = proxyActivities<DomainVerificationActivities>({ startToCloseTimeout: "1m", retry: RECHECK_RETRY });

export async function domainVerification(args: DomainVerificationArgs): Promise<void> {
  for (let i = 0; i < CHECKS_PER_RUN; i++) {
    const next = await activities.recheckDomainIfDue(args.domainId);
    if (next === null) return;
    await sleep(next.nextCheckInMs);
  }
  await continueAsNew<typeof domainVerification>(args);
}
