// What inbound processing needs from other parts of the service, as ports: the webhook outbox and the attachment
// scanner are wired in by the composition root.
import type { SqlTx } from "../db/database.js";
import type { MessageReceivedEvent, ReceivedEvent } from "../events/message-received.js";

export type { MessageReceivedEvent, ReceivedEvent };

/**
 * The webhook outbox. enqueue runs inside the caller's transaction, so the events commit with their messages or not
 * at all; dispatch runs after the commit and must never throw (failures are retried durably). What enqueue returns
 * is opaque to the caller: it hands it to dispatch unchanged.
 */
export interface MessageReceivedOutbox<Enqueued = unknown> {
  /**
   * Creates one delivery per active endpoint of each event's organization (the events of one store transaction),
   * each with the event's id and body.
   */
  enqueue(tx: SqlTx, events: readonly ReceivedEvent[]): Promise<Enqueued[]>;
  /** Makes the prompt first attempts of what was enqueued; retries are durable (Temporal). */
  dispatch(enqueued: readonly Enqueued[]): void;
}

/** Starts the durable scan of a stored message's attachments; idempotent per message. */
export interface AttachmentScanStarter {
  start(message: { readonly messageId: string; readonly organizationId: string; readonly inboxId: string }): Promise<void>;
}
