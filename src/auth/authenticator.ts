// Resolves an x-api-key to a Principal. Resolved keys are cached for a short time (KEY_CACHE_MS, at most 5 s), so a
// revoked or expired key, or a suspended organization, stops working on every process within that time.
import type { Database } from "../db/database.js";
import { ApiKey } from "../db/entities/index.js";
import { PermissionDenied, Unauthenticated } from "../errors.js";
import { lookupIdOf, secretMatches } from "./api-key-secret.js";
import type { Principal } from "./principal.js";

interface CachedKey {
  readonly principal: Principal;
  readonly hash: string;
  /** When this secret stops working (expiry or end of rotation overlap), or null. */
  readonly validUntil: Date | null;
  readonly revoked: boolean;
  readonly organizationActive: boolean;
  readonly fetchedAt: number;
}

export interface Authenticator {
  authenticate(secret: string | null, peerAddress: string | undefined): Promise<Principal>;
}

export function createAuthenticator(db: Database, cacheMs: number, now: () => number = Date.now): Authenticator {
  const cache = new Map<string, CachedKey>();

  async function load(lookupId: string): Promise<CachedKey | undefined> {
    const row = await db
      .fork()
      .findOne(ApiKey, { $or: [{ lookupId }, { previousLookupId: lookupId }] }, { populate: ["organization"] });
    if (!row) return undefined;
    const current = row.lookupId === lookupId;
    const principal: Principal = {
      keyId: row.id,
      organizationId: row.organization.id,
      kind: row.kind,
      scopes: row.scopes,
      inboxIds: row.inboxIds ?? null,
      allowedIps: row.allowedIps ?? null,
      sendMode: row.sendMode,
      allowedRecipientDomains: row.allowedRecipientDomains ?? null,
      expiresAt: row.expiresAt ?? null,
      requestsPerMinute: row.requestsPerMinute,
    };
    const ends = [row.expiresAt ?? null, current ? null : (row.previousValidUntil ?? new Date(0))].filter(
      (d): d is Date => d !== null,
    );
    return {
      principal,
      hash: current ? row.secretHash : (row.previousSecretHash ?? ""),
      validUntil: ends.length === 0 ? null : new Date(Math.min(...ends.map((d) => d.getTime()))),
      revoked: row.revokedAt != null,
      organizationActive: row.organization.status === "active",
      fetchedAt: now(),
    };
  }

  return {
    async authenticate(secret, peerAddress) {
      const lookupId = secret === null ? undefined : lookupIdOf(secret);
      if (secret === null || lookupId === undefined) throw new Unauthenticated();
      let entry = cache.get(lookupId);
      if (!entry || now() - entry.fetchedAt > cacheMs) {
        entry = await load(lookupId);
        if (entry) cache.set(lookupId, entry);
        else cache.delete(lookupId);
      }
      if (!entry || !secretMatches(secret, entry.hash) || entry.revoked) throw new Unauthenticated();
      if (entry.validUntil !== null && entry.validUntil.getTime() <= now()) throw new Unauthenticated();
      const { principal } = entry;
      if (principal.allowedIps !== null && !principal.allowedIps.includes(normalizeIp(peerAddress))) {
        throw new Unauthenticated();
      }
      if (!entry.organizationActive) {
        throw new PermissionDenied("the organization is not active", "organization_inactive");
      }
      return principal;
    },
  };
}

/** "::ffff:127.0.0.1" (an IPv4 peer on a dual-stack socket) is compared as "127.0.0.1". */
export function normalizeIp(address: string | undefined): string {
  if (address === undefined) return "";
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}
