// The `webhook_deliveries` table's columns (the webhook outbox's rows), for every path that writes them: the outbox
// inserts one per event and endpoint in the transaction that stores the messages (src/webhooks/outbox.ts). Attempts
// change only their state columns (src/webhooks/deliveries.ts).
import { unnestInsert, type InsertPart, type TypedColumns } from "./columns.js";

/** A delivery as inserted: every column. */
export interface WebhookDeliveryInsert {
  readonly id: string;
  readonly organizationId: string;
  readonly endpointId: string;
  readonly eventId: string;
  readonly eventType: string;
  /** The exact JSON body every attempt sends. */
  readonly payload: string;
  /** delivering when claimed for its first attempt at once, else pending. */
  readonly status: "pending" | "delivering";
  readonly attempts: number;
  readonly lastError: string | null;
  readonly lastAttemptAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

const COLUMNS: TypedColumns<WebhookDeliveryInsert> = [
  ["id", "uuid", (d) => d.id],
  ["organization_id", "uuid", (d) => d.organizationId],
  ["endpoint_id", "text", (d) => d.endpointId],
  ["event_id", "text", (d) => d.eventId],
  ["event_type", "text", (d) => d.eventType],
  ["payload", "text", (d) => d.payload],
  ["status", "text", (d) => d.status],
  ["attempts", "int", (d) => d.attempts],
  ["last_error", "text", (d) => d.lastError],
  ["last_attempt_at", "timestamptz", (d) => d.lastAttemptAt],
  ["created_at", "timestamptz", (d) => d.createdAt],
  ["updated_at", "timestamptz", (d) => d.updatedAt],
];

/** The deliveries' INSERT as a part of a statement (none for none), one array per column whatever their number. */
export function webhookDeliveriesInsert(deliveries: readonly WebhookDeliveryInsert[]): InsertPart[] {
  return deliveries.length === 0 ? [] : [unnestInsert("webhook_deliveries", COLUMNS, deliveries)];
}

