// Recording implementations of the ports inbound processing reports to (webhook outbox, attachment scans), for
// tests of the smtp role that assert what it reported and when. PostgreSQL, SMTP and Temporal stay real.
import type { AttachmentScanStarter, MessageReceivedEvent, MessageReceivedOutbox } from "../../src/inbound/ports.js";

export interface RecordingPorts {
  readonly outbox: MessageReceivedOutbox<string>;
  readonly scans: AttachmentScanStarter;
  /** Each enqueued event, with whether it ran inside the caller's transaction (rolled-back ones included). */
  readonly enqueued: (MessageReceivedEvent & { readonly inTransaction: boolean })[];
  readonly dispatched: string[][];
  readonly scansStarted: { messageId: string; organizationId: string; inboxId: string }[];
}

export function recordingPorts(): RecordingPorts {
  const enqueued: RecordingPorts["enqueued"] = [];
  const dispatched: string[][] = [];
  const scansStarted: RecordingPorts["scansStarted"] = [];
  return {
    enqueued,
    dispatched,
    scansStarted,
    outbox: {
      async enqueue(tx, events) {
        // The messages were inserted before: inside a transaction it already holds a transaction id.
        const [{ assigned }] = await tx.query<{ assigned: boolean }>("select pg_current_xact_id_if_assigned() is not null as assigned");
        for (const { organizationId, inboxId, threadId, messageId } of events) {
          enqueued.push({ organizationId, inboxId, threadId, messageId, inTransaction: assigned });
        }
        return events.map((e) => `delivery-of-${e.messageId}`);
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
