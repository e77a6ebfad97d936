// What inbound processing reports to (the webhook outbox, attachment scans), seen from a test. The smtp role's
// processing thread builds the real ones, so tests of the role observe what they wrote: message.received deliveries
// in PostgreSQL and scan workflows in Temporal. Tests of the processor alone (createInboundProcessor in the test's
// process) use recording ports, which also see whether events are enqueued inside the storing transaction.
import { WorkflowNotFoundError } from "@temporalio/client";
import type { AttachmentScanStarter, MessageReceivedEvent, MessageReceivedOutbox } from "../../src/inbound/ports.js";
import { attachmentScanWorkflowId } from "../../src/temporal/client.js";
import { eventually, uniqueName, type Tenant, type TestApp } from "./harness.js";

/** A message.received webhook endpoint of the tenant at `url` (its host must be in WEBHOOK_ALLOW_HOSTS). */
export async function webhookEndpoint(tenant: Tenant, url: string): Promise<{ id: string }> {
  const res = await tenant.request("POST", "/v1/webhooks", {
    body: { url, events: ["message.received"] },
    headers: { "idempotency-key": uniqueName("hook") },
  });
  if (res.status !== 201) throw new Error(`webhook create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

export interface MessageEvent {
  readonly endpointId: string;
  readonly eventType: string;
  readonly data: { readonly messageId: string; readonly inboxId: string; readonly threadId: string };
}

/** The webhook deliveries announcing a stored message. */
export async function eventsOf(app: TestApp, messageId: string): Promise<MessageEvent[]> {
  const rows = await app.db.sql.query<{ endpoint_id: string; event_type: string; payload: string }>(
    `select endpoint_id, event_type, payload from webhook_deliveries where payload::jsonb #>> '{data,messageId}' = $1`,
    [messageId],
  );
  return rows.map((r) => ({ endpointId: r.endpoint_id, eventType: r.event_type, data: JSON.parse(r.payload).data }));
}

/** Resolves once the attachment scan workflow of the message exists; answers its arguments. */
export async function scanStarted(app: TestApp, messageId: string): Promise<unknown[]> {
  const handle = app.temporal.workflow.getHandle(attachmentScanWorkflowId(messageId));
  return eventually(async () => {
    try {
      await handle.describe();
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return undefined;
      throw e;
    }
    const history = await handle.fetchHistory();
    const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
    return payloads.map((p) => JSON.parse(Buffer.from(p.data!).toString("utf8")) as unknown);
  });
}

export interface RecordingPorts {
  readonly outbox: MessageReceivedOutbox<string>;
  readonly scans: AttachmentScanStarter;
  /** Each event the store planned deliveries for (rolled-back batches' included). */
  readonly enqueued: MessageReceivedEvent[];
  readonly dispatched: string[][];
  readonly scansStarted: { messageId: string; organizationId: string; inboxId: string }[];
}

/** Ports that record what the processor reported and when, for tests of the processor in the test's process. */
export function recordingPorts(): RecordingPorts {
  const enqueued: RecordingPorts["enqueued"] = [];
  const dispatched: string[][] = [];
  const scansStarted: RecordingPorts["scansStarted"] = [];
  return {
    enqueued,
    dispatched,
    scansStarted,
    outbox: {
      plan(events) {
        for (const { organizationId, inboxId, threadId, messageId } of events) enqueued.push({ organizationId, inboxId, threadId, messageId });
        return { rows: [], enqueued: events.map((e) => `delivery-of-${e.messageId}`) };
      },
      dispatch(ids) {
        dispatched.push([...ids]);
      },
    },
    scans: {
      async start({ messageId, organizationId, inboxId }) {
        scansStarted.push({ messageId, organizationId, inboxId });
      },
    },
  };
}
