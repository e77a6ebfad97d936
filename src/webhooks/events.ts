// The message.received event as sent to receivers: ids only, never the subject, sender, body or attachments.
import type { MessageReceivedEvent } from "../inbound/ports.js";

export const MESSAGE_RECEIVED = "message.received";

export interface MessageReceivedPayload {
  readonly id: string;
  readonly type: typeof MESSAGE_RECEIVED;
  readonly createdAt: string;
  readonly data: { readonly messageId: string; readonly inboxId: string; readonly threadId: string };
}

/** The exact JSON body of an event, written once and sent byte for byte on every attempt. */
export function messageReceivedBody(eventId: string, createdAt: Date, event: MessageReceivedEvent): string {
  const payload: MessageReceivedPayload = {
    id: eventId,
    type: MESSAGE_RECEIVED,
    createdAt: createdAt.toISOString(),
    data: { messageId: event.messageId, inboxId: event.inboxId, threadId: event.threadId },
  };
  return JSON.stringify(payload);
}

/** The inbox an event is about (workflows carry it as a search attribute). */
export function inboxIdOf(body: string): string {
  return (JSON.parse(body) as MessageReceivedPayload).data.inboxId;
}
