// Workflows of the outbound benchmark's Temporal floor (bench/outbound-floor.ts): the shape of one delivery
// (a workflow per message, two activities) with nothing inside, and the shapes around it. Deterministic, no I/O.
import { proxyActivities, proxyLocalActivities } from "@temporalio/workflow";

export interface FloorActivities {
  one(id: string): Promise<number>;
  two(id: string): Promise<number>;
}

const remote = proxyActivities<FloorActivities>({ startToCloseTimeout: "1m" });
const local = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: "1m" });

/** A workflow that completes in its first task. */
export async function floorEmpty(_id: string): Promise<number> {
  return 0;
}

/** One activity. */
export async function floorOneActivity(id: string): Promise<number> {
  return remote.one(id);
}

/** Two activities one after the other: the shape of deliver/<submissionId> (queue, then one attempt). */
export async function floorTwoActivities(id: string): Promise<number> {
  const n = await remote.one(id);
  return n + (await remote.two(id));
}

/** The same two as local activities (run by the worker inside the workflow task, no activity tasks). */
export async function floorTwoLocalActivities(id: string): Promise<number> {
  const n = await local.one(id);
  return n + (await local.two(id));
}
