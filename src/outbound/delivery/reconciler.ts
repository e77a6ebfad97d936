// Starts the delivery of submissions that no workflow has picked up: committed, then the process died or Temporal
// was unreachable before the start. Starts are idempotent by workflow id (deliver/<submissionId>), so a delivery
// that is running, or that queued the submission a moment ago, is left be.
import type { Client } from "@temporalio/client";
import type { Database } from "../../db/database.js";
import type { Logger } from "../../logger.js";
import { createDeliveryStarter } from "../../temporal/client.js";
import { startReconciler } from "../../temporal/reconciler.js";
import type { DeliveryStarter } from "../ports.js";
import { strandedSubmissions } from "./store.js";

/** A submission still pending this long after its commit has lost its start (a start takes milliseconds). */
export const STRANDED_AFTER_MS = 30_000;
/** Starts per round; the next round takes the rest. */
const BATCH = 500;

export async function reconcileDeliveries(db: Database, starter: DeliveryStarter, strandedAfterMs = STRANDED_AFTER_MS): Promise<number> {
  const stranded = await strandedSubmissions(db, strandedAfterMs, BATCH);
  for (const submission of stranded) await starter.start(submission);
  return stranded.length;
}

/** The worker role's reconciler: every minute, starts the deliveries of submissions stranded as pending. */
export function startDeliveryReconciler(db: Database, temporal: Client, taskQueue: string, log: Logger): { stop(): Promise<void> } {
  const starter = createDeliveryStarter(temporal, taskQueue);
  return startReconciler("delivery", () => reconcileDeliveries(db, starter), log);
}
