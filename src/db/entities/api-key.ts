import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * An API key. The secret itself is never stored: only a lookup id (the public part of the key string) and a
 * SHA-256 hash of the whole secret. A rotated key keeps its previous secret usable until previousValidUntil.
 */
export const ApiKey = defineEntity({
  name: "ApiKey",
  tableName: "api_keys",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    kind: p.string().length(20).default("agent"),
    lookupId: p.string().length(32).unique(),
    secretHash: p.string().length(64),
    previousLookupId: p.string().length(32).nullable().unique(),
    previousSecretHash: p.string().length(64).nullable(),
    previousValidUntil: p.datetime(3).nullable(),
    scopes: p.array().$type<string[]>(),
    inboxIds: p.array().$type<string[]>().nullable(),
    allowedIps: p.array().$type<string[]>().nullable(),
    /** new_and_reply or reply_only. */
    sendMode: p.string().length(20).default("new_and_reply"),
    allowedRecipientDomains: p.array().$type<string[]>().nullable(),
    expiresAt: p.datetime(3).nullable(),
    requestsPerMinute: p.integer(),
    /** The key's own hold policy (none, first_contact, new_domain or all), or null for the organization's. */
    holdFor: p.string().length(20).nullable(),
    revokedAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
});

export type ApiKeyRow = InferEntity<typeof ApiKey>;
