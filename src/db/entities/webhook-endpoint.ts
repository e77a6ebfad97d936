import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * A webhook endpoint. Creation is idempotent per organization and key: the request's hash and the secret's replay
 * deadline decide what a retry with the same key gets. Deleted endpoints stay as tombstones (status `deleted`) so
 * a retry of their creation answers 410.
 */
export const WebhookEndpoint = defineEntity({
  name: "WebhookEndpoint",
  tableName: "webhook_endpoints",
  properties: {
    id: p.string().length(28).primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    url: p.string().length(2048),
    events: p.array().$type<string[]>(),
    /** active or deleted. */
    status: p.string().length(20).default("active"),
    /** whsec_<base64>: needed to sign every delivery, shown to the tenant only on create and exact replay. */
    signingSecret: p.string().length(128).hidden(),
    signingSecretReplayUntil: p.datetime(3),
    idempotencyKey: p.string().length(200),
    /** SHA-256 of the creation input, to tell an exact retry from a conflicting reuse of the key. */
    requestHash: p.string().length(64),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
    deletedAt: p.datetime(3).nullable(),
  },
  uniques: [{ properties: ["organization", "idempotencyKey"] }],
  indexes: [
    { properties: ["organization", "createdAt", "id"] },
    // A URL is registered once per organization among live endpoints; deleted ones free it.
    {
      name: "webhook_endpoints_live_url_unique",
      expression: `create unique index "webhook_endpoints_live_url_unique" on "webhook_endpoints" ("organization_id", "url") where "status" = 'active'`,
    },
  ],
});

export type WebhookEndpointRow = InferEntity<typeof WebhookEndpoint>;
