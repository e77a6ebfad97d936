// The message.received event as receivers get it, from a webhook or an event stream: ids only, never the subject,
// sender, body or attachments.
import { newId } from "../ids.js";
import { MESSAGE_RECEIVED, type EventPayload, type NewEvent } from "./event.js";

export { MESSAGE_RECEIVED };

/** What a message.received event is about: a stored inbound message. */
export interface MessageReceivedEvent {
  readonly organizationId: string;
  readonly inboxId: string;
  readonly threadId: string;
  readonly messageId: string;
}

/** A message.received event as made. */
export interface ReceivedEvent extends NewEvent {
  readonly type: typeof MESSAGE_RECEIVED;
  readonly inboxId: string;
  readonly threadId: string;
  readonly messageId: string;
  readonly senderAuthenticated: boolean;
}

/**
 * One event per stored message, made at `createdAt` (the store transaction's time); a message whose sender
 * authentication is not given did not authenticate.
 */
export function messageReceivedEvents(messages: readonly (MessageReceivedEvent & { readonly senderAuthenticated?: boolean })[], createdAt: Date): ReceivedEvent[] {
  return messages.map(({ organizationId, inboxId, threadId, messageId, senderAuthenticated = false }) => {
    const eventId = newId("evt");
    const about = { organizationId, inboxId, threadId, messageId };
    return { ...about, eventId, type: MESSAGE_RECEIVED, createdAt, senderAuthenticated, body: messageReceivedBody(eventId, createdAt, about) };
  });
}

/** The exact JSON body of an event, written once and sent byte for byte on every attempt. */
export function messageReceivedBody(eventId: string, createdAt: Date, event: MessageReceivedEvent): string {
  const payload: EventPayload = {
    id: eventId,
    type: MESSAGE_RECEIVED,
    createdAt: createdAt.toISOString(),
    data: { messageId: event.messageId, inboxId: event.inboxId, threadId: event.threadId },
  };
  return JSON.stringify(payload);
}
