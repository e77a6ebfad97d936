import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * One event for one endpoint: the outbox row, committed with the message it announces, so no event is ever lost.
 * Every attempt sends the same event id and payload.
 */
export const WebhookDelivery = defineEntity({
  name: "WebhookDelivery",
  tableName: "webhook_deliveries",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    endpointId: p.string().length(28),
    /** evt_<24 hex>. */
    eventId: p.string().length(28),
    eventType: p.string().length(64),
    /** The exact JSON body sent on every attempt. */
    payload: p.text(),
    /** pending, delivering, delivered or failed (attempts exhausted: dropped). */
    status: p.string().length(20).default("pending"),
    attempts: p.integer().default(0),
    lastError: p.text().nullable(),
    lastAttemptAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
  uniques: [{ properties: ["endpointId", "eventId"] }],
  indexes: [
    // The reconciler looks for pending and delivering rows; the partial index holds only those, not every row ever
    // delivered (Migration20261129090000_delivery_outbox_pages).
    {
      name: "webhook_deliveries_open_status_created_at_index",
      expression: `create index "webhook_deliveries_open_status_created_at_index" on "webhook_deliveries" ("status", "created_at") where "status" in ('pending', 'delivering')`,
    },
  ],
});

export type WebhookDeliveryRow = InferEntity<typeof WebhookDelivery>;
