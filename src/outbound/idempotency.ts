// Idempotency of the send routes (spec endpoint rule 1). The claim is the insert itself, guarded by the unique
// (organization, route, key) index and made in the same transaction as the message and submission it names: a
// request that fails leaves no claim behind, and a committed claim always names what it created. A try-lock on
// the key tells a retry that arrives while the first request is still being accepted (409) from one that finds
// the committed result (replay).
import { createHash } from "node:crypto";
import { findIdempotencyRecord, idempotencyRecordInsert } from "../db/tables/idempotency-records.js";
import type { TenantSqlTx } from "../db/tenant-store.js";
import { Conflict } from "../errors.js";
import { newUuid } from "../ids.js";

export type SendRoute = "send_message" | "reply" | "forward" | "send_email";

/** What an earlier request with the same key created. */
export interface IdempotentResult {
  readonly submissionId: string;
  readonly messageId: string | null;
}

/** SHA-256 of a canonical JSON rendering (keys sorted), so equal inputs hash equally whatever their key order. */
export function requestHash(input: unknown): string {
  return createHash("sha256").update(canonicalJson(input)).digest("hex");
}

function canonicalJson(value: unknown): string {
  if (value === undefined) return "null";
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/**
 * Claims the key inside the caller's transaction for the result about to be created. Returns null when claimed;
 * the earlier result when this is an exact retry; throws 409 for a different input or a request still in flight.
 */
export async function claimIdempotencyKey(
  tx: TenantSqlTx,
  claim: { route: SendRoute; key: string; requestHash: string; result: IdempotentResult; at: Date },
): Promise<IdempotentResult | null> {
  const lockName = `idempotency/${tx.organizationId}/${claim.route}/${claim.key}`;
  const record = {
    id: newUuid(),
    organizationId: tx.organizationId,
    route: claim.route,
    key: claim.key,
    requestHash: claim.requestHash,
    status: "completed" as const,
    submissionId: claim.result.submissionId,
    messageId: claim.result.messageId,
    createdAt: claim.at,
  };
  // The insert reads the lock's row, so it runs only after (and only if) the lock was taken: one round trip.
  const params: unknown[] = [lockName];
  const insert = idempotencyRecordInsert(record, "lock where locked")((value) => `$${params.push(value)}`);
  const [claimed] = await tx.query<{ locked: boolean; inserted: boolean }>(
    `with lock as (select pg_try_advisory_xact_lock(hashtextextended($1, 0)) as locked),
          ins as (${insert} returning id)
     select (select locked from lock) as locked, exists (select 1 from ins) as inserted`,
    params,
  );
  if (!claimed?.locked) {
    throw new Conflict("idempotency_request_in_progress", "a request with this idempotency key is still being accepted; retry shortly");
  }
  if (claimed.inserted) return null;
  const existing = await findIdempotencyRecord(tx, tx.organizationId, claim.route, claim.key);
  if (!existing) throw new Error("idempotency record vanished while its key was locked");
  if (existing.requestHash !== claim.requestHash) {
    throw new Conflict("idempotency_key_conflict", "this idempotency key was already used with a different request; use a fresh key for a new message");
  }
  return { submissionId: existing.submissionId, messageId: existing.messageId };
}
