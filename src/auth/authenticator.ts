// Resolves an x-api-key to a Principal. Resolved keys are cached for a short time (KEY_CACHE_MS, at most 5 s), so a
// revoked or expired key, or a suspended organization, stops working on every process within that time.
import type { Database } from "../db/database.js";
import { PermissionDenied, Unauthenticated } from "../errors.js";
import { lookupIdOf, secretMatches } from "./api-key-secret.js";
import type { Principal } from "./principal.js";

interface KeyRow {
  id: string;
  organization_id: string;
  kind: string;
  lookup_id: string;
  secret_hash: string;
  previous_secret_hash: string | null;
  previous_valid_until: Date | string | null;
  scopes: string[];
  inbox_ids: string[] | null;
  allowed_ips: string[] | null;
  send_mode: string;
  allowed_recipient_domains: string[] | null;
  expires_at: Date | string | null;
  requests_per_minute: number;
  revoked_at: Date | string | null;
  organization_status: string;
}

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
    // Raw SQL: this runs on every cache miss of every request, where hydrating entities costs several times the query.
    const [row] = await db.sql.query<KeyRow>(
      `select k.id, k.organization_id, k.kind, k.lookup_id, k.secret_hash, k.previous_secret_hash, k.previous_valid_until,
              k.scopes, k.inbox_ids, k.allowed_ips, k.send_mode, k.allowed_recipient_domains, k.expires_at,
              k.requests_per_minute, k.revoked_at, o.status as organization_status
         from api_keys k join organizations o on o.id = k.organization_id
        where k.lookup_id = $1 or k.previous_lookup_id = $1`,
      [lookupId],
    );
    if (!row) return undefined;
    const current = row.lookup_id === lookupId;
    const principal: Principal = {
      keyId: row.id,
      organizationId: row.organization_id,
      kind: row.kind,
      scopes: row.scopes,
      inboxIds: row.inbox_ids,
      allowedIps: row.allowed_ips,
      sendMode: row.send_mode,
      allowedRecipientDomains: row.allowed_recipient_domains,
      expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
      requestsPerMinute: row.requests_per_minute,
    };
    const ends = [row.expires_at, current ? null : (row.previous_valid_until ?? new Date(0))]
      .filter((d): d is Date | string => d !== null)
      .map((d) => new Date(d).getTime());
    return {
      principal,
      hash: current ? row.secret_hash : (row.previous_secret_hash ?? ""),
      validUntil: ends.length === 0 ? null : new Date(Math.min(...ends)),
      revoked: row.revoked_at !== null,
      organizationActive: row.organization_status === "active",
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
