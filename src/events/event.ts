// An event as the event log keeps it and webhooks and streams deliver it: message.received (an inbound message was
// stored) or submission.held (a send waits for a person's decision). Its JSON is written once, when the event is
// made, and sent byte for byte ever after; it names ids only, never a subject, an address or content.

export const MESSAGE_RECEIVED = "message.received";
export const SUBMISSION_HELD = "submission.held";

export type EventType = typeof MESSAGE_RECEIVED | typeof SUBMISSION_HELD;

/** An event as made: its id, type and time, the ids it is about, and its exact JSON body. */
export interface NewEvent {
  readonly eventId: string;
  readonly type: EventType;
  readonly organizationId: string;
  /** The inbox it is about; null for a submission.held of /v1/send. */
  readonly inboxId: string | null;
  readonly threadId: string | null;
  /** The message it is about (the inbound one, or a held send's stored message); null without one. */
  readonly messageId: string | null;
  readonly createdAt: Date;
  readonly body: string;
  /**
   * message.received: whether the message's sender authenticated (DMARC), kept beside the body, which the spec fixes
   * for webhooks, so that waits and streams filter on it without reading the message, and streams say it. Null for
   * an event not about an inbound sender (submission.held): a stream of authenticated senders only leaves it out.
   */
  readonly senderAuthenticated: boolean | null;
}

/** The JSON body of an event: the ids of `data` that are set, in a fixed order. */
export interface EventPayload {
  readonly id: string;
  readonly type: EventType;
  readonly createdAt: string;
  readonly data: { readonly messageId?: string; readonly inboxId?: string; readonly threadId?: string; readonly submissionId?: string };
}

/** The inbox an event's body is about, or null (workflows carry it as a search attribute). */
export function inboxIdOf(body: string): string | null {
  return (JSON.parse(body) as EventPayload).data.inboxId ?? null;
}
