// What a delivery workflow's history says of its attempts, as the Temporal UI shows it: each attempt's result (a
// local activity's marker, an activity's completion), decoded from its JSON payload.
import type { Client } from "@temporalio/client";
import { deliveryWorkflowId } from "../../src/temporal/client.js";

/** Every attempt's result in a delivery's history: local activities' markers and activities' completions. */
export async function attemptResults(temporal: Client, submissionId: string): Promise<unknown[]> {
  const history = await temporal.workflow.getHandle(deliveryWorkflowId(submissionId)).fetchHistory();
  const decode = (payloads: { data?: Uint8Array | null }[] | null | undefined) =>
    (payloads ?? []).flatMap((p) => (p.data ? [JSON.parse(Buffer.from(p.data).toString("utf8")) as unknown] : []));
  return (history.events ?? []).flatMap((e) => [
    ...decode(e.markerRecordedEventAttributes?.details?.result?.payloads),
    ...decode(e.activityTaskCompletedEventAttributes?.result?.payloads),
  ]).filter((r): r is { remaining: number } => typeof r === "object" && r !== null && "remaining" in r);
}
