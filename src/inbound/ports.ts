// What inbound processing needs from other parts of the service, as ports: the webhook outbox and the attachment
// scanner are wired in by the composition root.
import type { EntityManager } from "@mikro-orm/postgresql";

/** A message.received event: ids only (the payload carries no subject, sender, body or attachments). */
export interface MessageReceivedEvent {
  readonly organizationId: string;
  readonly inboxId: string;
  readonly threadId: string;
  readonly messageId: string;
}

/**
 * The webhook outbox. enqueue runs inside the caller's transaction, so the event commits with the message or not
 * at all; dispatch runs after the commit and must never throw (failures are retried durably).
 */
export interface MessageReceivedOutbox {
  /** Creates one delivery per active endpoint of the organization; returns the delivery ids. */
  enqueue(em: EntityManager, event: MessageReceivedEvent): Promise<string[]>;
  /** Makes a prompt first attempt for the given deliveries; retries are durable (Temporal). */
  dispatch(deliveryIds: readonly string[]): void;
}

/** Starts the durable scan of a stored message's attachments; idempotent per message. */
export interface AttachmentScanStarter {
  start(message: { readonly messageId: string; readonly organizationId: string; readonly inboxId: string }): Promise<void>;
}
