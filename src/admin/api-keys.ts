// Operator actions on API keys: issue (the secret is shown once), rotate, update restrictions, revoke, list.
import type { EntityManager } from "@mikro-orm/postgresql";
import { issueSecret } from "../auth/api-key-secret.js";
import type { HoldPolicy } from "../auth/principal.js";
import type { Config } from "../config.js";
import { ApiKey, Organization } from "../db/entities/index.js";
import type { ApiKeyRow } from "../db/entities/api-key.js";
import { newUuid } from "../ids.js";
import { definedOnly } from "./organizations.js";

export const SEND_MODES = ["new_and_reply", "reply_only"] as const;

export interface KeyRestrictions {
  scopes?: string[];
  inboxIds?: string[] | null;
  allowedIps?: string[] | null;
  sendMode?: (typeof SEND_MODES)[number];
  allowedRecipientDomains?: string[] | null;
  expiresAt?: Date | null;
  requestsPerMinute?: number;
  /** The key's own hold policy; null leaves it to the organization's. */
  holdFor?: HoldPolicy | null;
}

/** What the operator sees of a key: never the hash or the lookup id. */
export function describeKey(key: ApiKeyRow) {
  return {
    id: key.id,
    organizationId: key.organization.id,
    kind: key.kind,
    scopes: key.scopes,
    inboxIds: key.inboxIds ?? null,
    allowedIps: key.allowedIps ?? null,
    sendMode: key.sendMode,
    allowedRecipientDomains: key.allowedRecipientDomains ?? null,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    requestsPerMinute: key.requestsPerMinute,
    holdFor: key.holdFor ?? null,
    revokedAt: key.revokedAt?.toISOString() ?? null,
    previousSecretValidUntil: key.previousValidUntil?.toISOString() ?? null,
    createdAt: key.createdAt.toISOString(),
  };
}

export async function issueKey(
  em: EntityManager,
  defaults: Config["defaults"],
  organizationId: string,
  restrictions: KeyRestrictions & { scopes: string[] },
): Promise<{ key: ApiKeyRow; secret: string }> {
  const org = await em.findOneOrFail(Organization, organizationId);
  const { secret, lookupId, hash } = issueSecret();
  const now = new Date();
  const key = em.create(ApiKey, {
    id: newUuid(),
    organization: org,
    kind: "agent",
    lookupId,
    secretHash: hash,
    previousLookupId: null,
    previousSecretHash: null,
    previousValidUntil: null,
    scopes: restrictions.scopes,
    inboxIds: restrictions.inboxIds ?? null,
    allowedIps: restrictions.allowedIps ?? null,
    sendMode: restrictions.sendMode ?? "new_and_reply",
    allowedRecipientDomains: restrictions.allowedRecipientDomains ?? null,
    expiresAt: restrictions.expiresAt ?? null,
    requestsPerMinute: restrictions.requestsPerMinute ?? defaults.requestsPerMinute,
    holdFor: restrictions.holdFor ?? null,
    revokedAt: null,
    createdAt: now,
    updatedAt: now,
  });
  await em.flush();
  return { key, secret };
}

/** A new secret; the previous one keeps working for `overlapMs` so callers can switch without downtime. */
export async function rotateKey(em: EntityManager, id: string, overlapMs: number): Promise<{ key: ApiKeyRow; secret: string }> {
  const key = await em.findOneOrFail(ApiKey, id, { populate: ["organization"] });
  if (key.revokedAt) throw new Error("a revoked key cannot be rotated");
  const { secret, lookupId, hash } = issueSecret();
  const now = new Date();
  em.assign(key, {
    previousLookupId: key.lookupId,
    previousSecretHash: key.secretHash,
    previousValidUntil: new Date(now.getTime() + overlapMs),
    lookupId,
    secretHash: hash,
    updatedAt: now,
  });
  await em.flush();
  return { key, secret };
}

export async function updateKey(em: EntityManager, id: string, changes: KeyRestrictions): Promise<ApiKeyRow> {
  const key = await em.findOneOrFail(ApiKey, id, { populate: ["organization"] });
  em.assign(key, { ...definedOnly(changes), updatedAt: new Date() });
  await em.flush();
  return key;
}

export async function revokeKey(em: EntityManager, id: string): Promise<ApiKeyRow> {
  const key = await em.findOneOrFail(ApiKey, id, { populate: ["organization"] });
  key.revokedAt ??= new Date();
  key.updatedAt = new Date();
  await em.flush();
  return key;
}

export function listKeys(em: EntityManager, organizationId: string): Promise<ApiKeyRow[]> {
  return em.find(ApiKey, { organization: organizationId }, { orderBy: { createdAt: "asc" }, populate: ["organization"] });
}
