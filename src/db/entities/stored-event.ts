import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * The event log (src/events/log.ts): every event, committed with what it announces, kept for EVENT_RETENTION. Event
 * streams read it by `seq` and resume from it; each webhook delivery carries the event's id and payload.
 */
export const StoredEvent = defineEntity({
  name: "StoredEvent",
  tableName: "events",
  properties: {
    /** evt_<24 hex>. */
    id: p.string().length(28).primary(),
    /** Position in the log; within one organization in commit order (appends of an organization take turns). */
    seq: p.bigint().autoincrement(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** The inbox the event is about; null for a submission.held of /v1/send, which has none. */
    inboxId: p.string().length(28).nullable(),
    /** message.received or submission.held. */
    type: p.string().length(64),
    /** The exact JSON payload, as webhooks send it. */
    payload: p.text(),
    /**
     * message.received: whether the message's sender authenticated, for streams that filter on it and say it (the
     * webhook payload does not carry it); null for events stored before sender authentication.
     */
    senderAuthenticated: p.boolean().nullable(),
    createdAt: p.datetime(3),
  },
  indexes: [{ properties: ["organization", "seq"] }, { properties: ["createdAt"] }],
});

export type StoredEventRow = InferEntity<typeof StoredEvent>;
