// The bare baseline of the API benchmark: node:http + a `pg` Pool doing, per request, what our interceptor chain
// and handlers do at the SQL level, with no router, protobuf, validation or ORM in between. It reads the same
// configuration as `mailbox serve` (DATABASE_URL, HTTP_PORT, BIND_HOST, KEY_CACHE_MS, CURSOR_SECRET) and prints
// {"api": url} on stdout when listening.
//
// Statements, the same text as ours sends (src/auth/authenticator.ts, src/interceptors/rate-limit.ts,
// src/accounts/profile.ts, src/inboxes/inboxes.ts through src/pagination/keyset.ts), with bound parameters:
//   every request   KEY_SQL on a key-cache miss (cache time KEY_CACHE_MS, as the authenticator), then RATE_SQL;
//   GET /v1/me      ORGANIZATION_SQL;
//   GET /v1/inboxes INBOXES_SQL with limit + 1.
// No BEGIN/COMMIT on either side: the unit of work flushes nothing on a read.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { lookupIdOf, secretMatches } from "../src/auth/api-key-secret.js";
import { loadConfig } from "../src/config.js";
import { createCursorCodec } from "../src/pagination/cursor.js";

/** The pool size of openDatabase, which `mailbox serve` uses. */
const POOL_MAX = 20;
const DEFAULT_PAGE_SIZE = 20;
const MAX_PAGE_SIZE = 100;

const KEY_SQL = `select k.id, k.organization_id, k.kind, k.lookup_id, k.secret_hash, k.previous_secret_hash, k.previous_valid_until,
         k.scopes, k.inbox_ids, k.allowed_ips, k.send_mode, k.allowed_recipient_domains, k.expires_at,
         k.requests_per_minute, k.revoked_at, k.hold_for, o.status as organization_status, o.hold_for as organization_hold_for
    from api_keys k join organizations o on o.id = k.organization_id
   where k.lookup_id = $1 or k.previous_lookup_id = $1`;
const RATE_SQL = `insert into request_windows (key_id, window_start, count) values ($1, to_timestamp($2), 1)
  on conflict (key_id, window_start) do update set count = request_windows.count + 1
  returning count`;
const ORGANIZATION_SQL = `select id, status, messages_per_minute, messages_per_day, recipients_per_day, managed_limit, managed_used, hold_for
  from organizations where id = $1`;
const INBOXES_SQL = `select id, local_part, domain, address, domain_kind, domain_id, display_name, status, created_at, updated_at
  from inboxes where organization_id = $1 and (status = 'active') order by created_at desc, id desc limit $2`;

interface KeyRow {
  id: string;
  organization_id: string;
  kind: string;
  lookup_id: string;
  secret_hash: string;
  previous_secret_hash: string | null;
  previous_valid_until: Date | null;
  scopes: string[];
  inbox_ids: string[] | null;
  allowed_ips: string[] | null;
  send_mode: string;
  allowed_recipient_domains: string[] | null;
  expires_at: Date | null;
  requests_per_minute: number;
  revoked_at: Date | null;
  hold_for: string | null;
  organization_status: string;
  organization_hold_for: string;
}

interface InboxRow {
  id: string;
  local_part: string;
  domain_id: string | null;
  domain_kind: string;
  domain: string;
  address: string;
  display_name: string;
  status: string;
  created_at: Date;
  updated_at: Date;
}

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

const config = loadConfig();
const pool = new pg.Pool({ connectionString: config.databaseUrl, min: 0, max: POOL_MAX });
const cursors = createCursorCodec(config.cursorSecret ?? "");
const keyCache = new Map<string, { row: KeyRow; fetchedAt: number }>();

async function authenticate(req: IncomingMessage, scope: string): Promise<KeyRow> {
  const secret = req.headers["x-api-key"];
  const lookupId = typeof secret === "string" ? lookupIdOf(secret) : undefined;
  if (typeof secret !== "string" || lookupId === undefined) throw new HttpFailure(401, "unauthenticated");
  let cached = keyCache.get(lookupId);
  if (!cached || Date.now() - cached.fetchedAt > config.keyCacheMs) {
    const { rows } = await pool.query<KeyRow>(KEY_SQL, [lookupId]);
    cached = rows[0] && { row: rows[0], fetchedAt: Date.now() };
    if (cached) keyCache.set(lookupId, cached);
    else keyCache.delete(lookupId);
  }
  const key = cached?.row;
  if (!key || !isValid(key, lookupId, secret)) throw new HttpFailure(401, "unauthenticated");
  if (key.organization_status !== "active") throw new HttpFailure(403, "organization_inactive");
  if (scope !== "" && !key.scopes.includes("*") && !key.scopes.includes(scope)) throw new HttpFailure(403, "missing_scope");
  return key;
}

function isValid(key: KeyRow, lookupId: string, secret: string): boolean {
  const current = key.lookup_id === lookupId;
  const hash = current ? key.secret_hash : (key.previous_secret_hash ?? "");
  if (!secretMatches(secret, hash) || key.revoked_at !== null) return false;
  if (key.expires_at !== null && key.expires_at.getTime() <= Date.now()) return false;
  return current || (key.previous_valid_until?.getTime() ?? 0) > Date.now();
}

async function countRequest(key: KeyRow): Promise<void> {
  const windowStart = Math.floor(Date.now() / 60_000) * 60_000;
  const { rows } = await pool.query<{ count: number }>(RATE_SQL, [key.id, windowStart / 1000]);
  if (rows[0]!.count > key.requests_per_minute) throw new HttpFailure(429, "rate_limited");
}

async function getMe(key: KeyRow): Promise<unknown> {
  const { rows } = await pool.query(ORGANIZATION_SQL, [key.organization_id]);
  const org = rows[0]!;
  return {
    organization: {
      id: org.id,
      status: org.status,
      sendLimits: {
        messagesPerMinute: org.messages_per_minute,
        messagesPerDay: org.messages_per_day,
        recipientsPerDay: org.recipients_per_day,
      },
      holdFor: org.hold_for,
    },
    apiKey: {
      id: key.id,
      kind: key.kind,
      scopes: key.scopes,
      inboxIds: key.inbox_ids,
      allowedIps: key.allowed_ips,
      sendMode: key.send_mode,
      allowedRecipientDomains: key.allowed_recipient_domains,
      expiresAt: key.expires_at?.toISOString() ?? null,
      requestsPerMinute: key.requests_per_minute,
      holdFor: key.hold_for,
    },
    managedStarter: { limit: org.managed_limit, used: org.managed_used, remaining: Math.max(0, org.managed_limit - org.managed_used) },
    platformLimits: { ...config.platformLimits, uploadStorageBytes: config.uploads.storageBytes },
  };
}

/** The first page only: the benchmark never follows a cursor. */
async function listInboxes(key: KeyRow, query: URLSearchParams): Promise<unknown> {
  const limit = query.has("limit") ? Number(query.get("limit")) : DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) throw new HttpFailure(400, "invalid_request");
  const { rows } = await pool.query<InboxRow>(INBOXES_SQL, [key.organization_id, limit + 1]);
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  const scope = { organizationId: key.organization_id, resource: "inboxes" };
  return {
    inboxes: items.map((row) => ({
      id: row.id,
      localPart: row.local_part,
      domainId: row.domain_id,
      domainKind: row.domain_kind,
      domain: row.domain,
      address: row.address,
      displayName: row.display_name,
      status: row.status,
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
    })),
    nextCursor: rows.length > limit && last ? cursors.encode(scope, { createdAt: last.created_at, id: last.id }) : null,
  };
}

async function route(req: IncomingMessage): Promise<unknown> {
  const url = new URL(req.url ?? "/", "http://baseline");
  if (req.method === "GET" && url.pathname === "/v1/me") {
    const key = await authenticate(req, "");
    await countRequest(key);
    return getMe(key);
  }
  if (req.method === "GET" && url.pathname === "/v1/inboxes") {
    const key = await authenticate(req, "mailbox:read");
    await countRequest(key);
    return listInboxes(key, url.searchParams);
  }
  throw new HttpFailure(404, "not_found");
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(text)),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
  });
  res.end(text);
}

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  route(req).then(
    (body) => sendJson(res, 200, body),
    (e: unknown) => {
      if (!(e instanceof HttpFailure)) console.error("baseline:", e);
      const failure = e instanceof HttpFailure ? e : new HttpFailure(500, "internal_error");
      sendJson(res, failure.status, { code: failure.code });
    },
  );
});

server.listen(config.httpPort, config.bindHost, () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ api: `http://${config.bindHost}:${port}` }));
});

// An orderly exit (requests in flight finish first), so that --cpu-prof can write its profile.
process.once("SIGTERM", () => {
  server.close(() => void pool.end().finally(() => process.exit(0)));
  server.closeIdleConnections();
});
