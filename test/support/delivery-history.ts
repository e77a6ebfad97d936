// What a delivery workflow's history says of its activities, as the Temporal UI shows it: each result (a local
// activity's marker, an activity's completion), decoded from its JSON payload.
import type { Client } from "@temporalio/client";
import { deliveryWorkflowId } from "../../src/temporal/client.js";

/** Every activity result in a delivery's history, in order: local activities' markers and activities' completions. */
export async function activityResults(temporal: Client, submissionId: string): Promise<unknown[]> {
  const history = await temporal.workflow.getHandle(deliveryWorkflowId(submissionId)).fetchHistory();
  // JSON payloads only: a void result (an expiry's) is binary/null, without data.
  const decode = (payloads: { metadata?: Record<string, Uint8Array> | null; data?: Uint8Array | null }[] | null | undefined) =>
    (payloads ?? []).flatMap((p) =>
      p.data && Buffer.from(p.metadata?.encoding ?? []).toString() === "json/plain" ? [JSON.parse(Buffer.from(p.data).toString("utf8")) as unknown] : [],
    );
  return (history.events ?? []).flatMap((e) => [
    ...decode(e.markerRecordedEventAttributes?.details?.result?.payloads),
    ...decode(e.activityTaskCompletedEventAttributes?.result?.payloads),
  ]);
}

/** The results of the attempts (to one domain each) among them. */
export async function attemptResults(temporal: Client, submissionId: string): Promise<unknown[]> {
  return (await activityResults(temporal, submissionId)).filter((r) => typeof r === "object" && r !== null && "remaining" in r);
}
