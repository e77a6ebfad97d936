// What inbound processing needs from other parts of the service, as ports: the webhook outbox and the attachment
// scanner are wired in by the composition root.
import type { InsertPart } from "../db/tables/columns.js";
import type { ActiveEndpoint } from "../db/tables/webhook-endpoints.js";
import type { MessageReceivedEvent, ReceivedEvent } from "../events/message-received.js";

export type { MessageReceivedEvent, ReceivedEvent };

/**
 * The webhook outbox. The caller reads the active endpoints of its events' organizations in its transaction
 * (activeEndpointsSelect, locked) and writes the delivery rows plan answers as statement parts in the same
 * transaction (with the events: one round trip), so the deliveries commit with their messages or not at all;
 * dispatch runs after the commit and must never throw (failures are retried durably). What plan answers as
 * enqueued is opaque to the caller: it hands it to dispatch unchanged.
 */
export interface MessageReceivedOutbox<Enqueued = unknown> {
  /** One delivery per event and endpoint of its organization that receives its type, each with the event's id and body. */
  plan(events: readonly ReceivedEvent[], endpoints: readonly ActiveEndpoint[]): PlannedDeliveries<Enqueued>;
  /** Makes the prompt first attempts of what was enqueued; retries are durable (Temporal). */
  dispatch(enqueued: readonly Enqueued[]): void;
}

export interface PlannedDeliveries<Enqueued> {
  /** The rows' INSERTs, to run in the same transaction (insertTogether, appendEvents). */
  readonly rows: readonly InsertPart[];
  readonly enqueued: Enqueued[];
}

/** Starts the durable scan of a stored message's attachments; idempotent per message. */
export interface AttachmentScanStarter {
  start(message: { readonly messageId: string; readonly organizationId: string; readonly inboxId: string }): Promise<void>;
}
