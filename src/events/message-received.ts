// The message.received event as receivers get it, from a webhook or an event stream: ids only, never the subject,
// sender, body or attachments. Its JSON is written once, when the event is made, and sent byte for byte ever after.
import { newId } from "../ids.js";

export const MESSAGE_RECEIVED = "message.received";

/** What a message.received event is about: a stored inbound message. */
export interface MessageReceivedEvent {
  readonly organizationId: string;
  readonly inboxId: string;
  readonly threadId: string;
  readonly messageId: string;
}

export interface MessageReceivedPayload {
  readonly id: string;
  readonly type: typeof MESSAGE_RECEIVED;
  readonly createdAt: string;
  readonly data: { readonly messageId: string; readonly inboxId: string; readonly threadId: string };
}

/** An event as made: its id, when, and its exact JSON body, with the ids it is about. */
export interface NewEvent extends MessageReceivedEvent {
  readonly eventId: string;
  readonly createdAt: Date;
  readonly body: string;
  /**
   * Whether the message's sender authenticated (DMARC): kept beside the body, which the spec fixes for webhooks, so
   * that waits and streams filter on it without reading the message, and streams say it.
   */
  readonly senderAuthenticated: boolean;
}

/**
 * One event per stored message, made at `createdAt` (the store transaction's time); a message whose sender
 * authentication is not given did not authenticate.
 */
export function messageReceivedEvents(messages: readonly (MessageReceivedEvent & { readonly senderAuthenticated?: boolean })[], createdAt: Date): NewEvent[] {
  return messages.map(({ organizationId, inboxId, threadId, messageId, senderAuthenticated = false }) => {
    const eventId = newId("evt");
    const about = { organizationId, inboxId, threadId, messageId };
    return { ...about, eventId, createdAt, senderAuthenticated, body: messageReceivedBody(eventId, createdAt, about) };
  });
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
