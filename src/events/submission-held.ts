// The submission.held event: a send was held for a person's decision (the holdFor policy of its key or
// organization). Ids only, as every event: the submission, and for an inbox send its stored message, inbox and thread
// (a /v1/send has none of them). A webhook endpoint receives it only when its events name it.
import { newId } from "../ids.js";
import { SUBMISSION_HELD, type EventPayload, type NewEvent } from "./event.js";

/** What a submission.held event is about. */
export interface HeldSubmission {
  readonly organizationId: string;
  readonly submissionId: string;
  /** The stored message, its inbox and thread; null for /v1/send. */
  readonly message: { readonly messageId: string; readonly inboxId: string; readonly threadId: string } | null;
}

export function submissionHeldEvent(held: HeldSubmission, createdAt: Date): NewEvent {
  const eventId = newId("evt");
  const payload: EventPayload = {
    id: eventId,
    type: SUBMISSION_HELD,
    createdAt: createdAt.toISOString(),
    data: { ...(held.message ?? {}), submissionId: held.submissionId },
  };
  return {
    eventId,
    type: SUBMISSION_HELD,
    organizationId: held.organizationId,
    inboxId: held.message?.inboxId ?? null,
    threadId: held.message?.threadId ?? null,
    messageId: held.message?.messageId ?? null,
    createdAt,
    body: JSON.stringify(payload),
    senderAuthenticated: null,
  };
}
