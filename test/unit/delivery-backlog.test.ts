// How long a submission accepted now would wait for its first attempt, from the workers' backlog reports: what
// acceptance compares with DELIVERY_BACKLOG_MAX_S. Table-driven; the end-to-end refusal is in delivery-queue.test.
import { expect, test } from "vitest";
import { expectedWaitMs, type BacklogReport } from "../../src/outbound/delivery/queue.js";

const cases: { name: string; reports: BacklogReport[]; waitMs: number }[] = [
  { name: "no reports: nothing waits", reports: [], waitMs: 0 },
  { name: "nothing pending: no wait, however old the last report's oldest was", reports: [{ pending: 0, oldestMs: 4000, claimsPerS: 10 }], waitMs: 0 },
  { name: "the ones ahead over the claim rate", reports: [{ pending: 100, oldestMs: 2000, claimsPerS: 10 }], waitMs: 10_000 },
  { name: "never less than the oldest has waited", reports: [{ pending: 5, oldestMs: 3000, claimsPerS: 10 }], waitMs: 3000 },
  { name: "no claims at all: the oldest's wait, which grows", reports: [{ pending: 5, oldestMs: 3000, claimsPerS: 0 }], waitMs: 3000 },
  {
    name: "two workers see the same announcements and claim together",
    reports: [
      { pending: 100, oldestMs: 1000, claimsPerS: 5 },
      { pending: 80, oldestMs: 1000, claimsPerS: 5 },
    ],
    waitMs: 10_000,
  },
];

test.each(cases)("$name", ({ reports, waitMs }) => {
  expect(expectedWaitMs(reports)).toBe(waitMs);
});
