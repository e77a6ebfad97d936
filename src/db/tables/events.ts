// The `events` table's columns (the event log, src/events/log.ts, the only path that writes it). Its `seq` is not
// among them: the database gives each row its position as it is inserted, in the order given.
import { unnestInsert, type InsertPart, type TypedColumns } from "./columns.js";

/** An event as inserted: every column but its position. */
export interface EventInsert {
  /** evt_<24 hex>. */
  readonly id: string;
  readonly organizationId: string;
  /** Null for a submission.held of /v1/send. */
  readonly inboxId: string | null;
  /** message.received or submission.held. */
  readonly type: string;
  /** The exact JSON payload webhooks send. */
  readonly payload: string;
  /** message.received: whether the message's sender authenticated; streams filter on it and say it. */
  readonly senderAuthenticated: boolean | null;
  readonly createdAt: Date;
}

const COLUMNS: TypedColumns<EventInsert> = [
  ["id", "text", (e) => e.id],
  ["organization_id", "uuid", (e) => e.organizationId],
  ["inbox_id", "text", (e) => e.inboxId],
  ["type", "text", (e) => e.type],
  ["payload", "text", (e) => e.payload],
  ["sender_authenticated", "boolean", (e) => e.senderAuthenticated],
  ["created_at", "timestamptz", (e) => e.createdAt],
];

/**
 * The events' INSERT as a part of a statement, in the order given (so are their positions); none of them gets its
 * position before the one-row relation `after` (the event log's locks) was read, when named.
 */
export function eventsInsert(events: readonly EventInsert[], after?: string): InsertPart {
  return unnestInsert("events", COLUMNS, events, after);
}
