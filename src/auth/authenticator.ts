// Resolves an x-api-key to a Principal. Resolved keys are cached for a short time (KEY_CACHE_MS, at most 5 s), so a
// revoked or expired key, or a suspended organization, stops working on every process within that time; a lookup id
// no key has is remembered as unknown for the same time. Failed authentications are counted per peer address.
import type { Database } from "../db/database.js";
import { PermissionDenied, RateLimited, Unauthenticated } from "../errors.js";
import { lookupIdOf, secretMatches } from "./api-key-secret.js";
import { createFailureLimiter } from "./failure-limiter.js";
import { normalizeIp } from "./peer-address.js";
import type { HoldPolicy, Principal } from "./principal.js";

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
  hold_for: HoldPolicy | null;
  organization_status: string;
  organization_hold_for: HoldPolicy;
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

export interface AuthenticatorOptions {
  /** How long a key read from the database is trusted, and a lookup id it did not know stays unknown (KEY_CACHE_MS). */
  readonly cacheMs: number;
  /** Failed authentications of well-formed keys one address may make per minute (API_AUTH_FAILURES_PER_MINUTE). */
  readonly failuresPerMinute: number;
  readonly now?: () => number;
}

/** Unknown lookup ids remembered at once; a flood of fresh ids is bounded by the failure limit instead. */
const MAX_UNKNOWN_IDS = 10_000;

export function createAuthenticator(db: Database, options: AuthenticatorOptions): Authenticator {
  const { cacheMs, now = Date.now } = options;
  /** Keys that exist, by lookup id. */
  const cache = new Map<string, CachedKey>();
  /** Lookup ids the database did not know, until when that answer is trusted (insertion order = age). */
  const unknown = new Map<string, number>();
  /** Lookups under way: concurrent requests with one lookup id share a query. */
  const loading = new Map<string, Promise<CachedKey | undefined>>();
  const failures = createFailureLimiter(options.failuresPerMinute, now);

  async function load(lookupId: string): Promise<CachedKey | undefined> {
    // Raw SQL: this runs on every cache miss of every request, where hydrating entities costs several times the query.
    const [row] = await db.sql.query<KeyRow>(
      `select k.id, k.organization_id, k.kind, k.lookup_id, k.secret_hash, k.previous_secret_hash, k.previous_valid_until,
              k.scopes, k.inbox_ids, k.allowed_ips, k.send_mode, k.allowed_recipient_domains, k.expires_at,
              k.requests_per_minute, k.revoked_at, k.hold_for, o.status as organization_status, o.hold_for as organization_hold_for
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
      keyHoldFor: row.hold_for,
      holdFor: row.hold_for ?? row.organization_hold_for,
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

  function rememberUnknown(lookupId: string): void {
    if (cacheMs === 0) return;
    unknown.delete(lookupId);
    if (unknown.size >= MAX_UNKNOWN_IDS) unknown.delete(unknown.keys().next().value!);
    unknown.set(lookupId, now() + cacheMs);
  }

  /**
   * The key of a lookup id (undefined when no key has it), from the cache or one shared query. A query for a lookup
   * id this process does not know is charged to the peer as a failure before it runs (refunded when the key
   * exists), so one address cannot have more such queries under way than its failure limit.
   */
  async function resolve(lookupId: string, peerAddress: string | undefined): Promise<{ entry: CachedKey | undefined; charged: boolean }> {
    const cached = cache.get(lookupId);
    if (cached && now() - cached.fetchedAt <= cacheMs) return { entry: cached, charged: false };
    if (!cached) {
      // Keys this process knows are re-read as usual, so their callers are not refused for another client's failures.
      const waitMs = failures.retryAfterMs(peerAddress);
      if (waitMs > 0) {
        throw new RateLimited("too many failed authentications from this address", waitMs / 1000, "too_many_failed_authentications");
      }
      if ((unknown.get(lookupId) ?? 0) > now()) return { entry: undefined, charged: false };
    }
    let pending = loading.get(lookupId);
    let charged = false;
    if (!pending) {
      if (!cached) {
        failures.record(peerAddress);
        charged = true;
      }
      pending = load(lookupId)
        .then((entry) => {
          if (entry) {
            cache.set(lookupId, entry);
            unknown.delete(lookupId);
          } else {
            cache.delete(lookupId);
            rememberUnknown(lookupId);
          }
          return entry;
        })
        .finally(() => loading.delete(lookupId));
      loading.set(lookupId, pending);
    }
    return { entry: await pending, charged };
  }

  return {
    async authenticate(secret, peerAddress) {
      const lookupId = secret === null ? undefined : lookupIdOf(secret);
      if (secret === null || lookupId === undefined) throw new Unauthenticated();
      const { entry, charged } = await resolve(lookupId, peerAddress);
      const usable =
        entry !== undefined &&
        secretMatches(secret, entry.hash) &&
        !entry.revoked &&
        (entry.validUntil === null || entry.validUntil.getTime() > now()) &&
        (entry.principal.allowedIps === null || entry.principal.allowedIps.includes(normalizeIp(peerAddress)));
      if (!usable) {
        if (!charged) failures.record(peerAddress);
        throw new Unauthenticated();
      }
      if (charged) failures.refund(peerAddress);
      if (!entry.organizationActive) {
        throw new PermissionDenied("the organization is not active", "organization_inactive");
      }
      return entry.principal;
    },
  };
}
