// The `idempotency_records` table's columns and row mapping, for every path that claims or reads a send route's
// idempotency key (src/outbound/idempotency.ts, acceptance's 410 for a key whose result was deleted).
import type { SqlTx } from "../database.js";
import { insertFromPart, type Columns, type InsertPart } from "./columns.js";

/** A claimed key as inserted: every column. */
export interface IdempotencyRecordInsert {
  readonly id: string;
  readonly organizationId: string;
  /** send_message, reply, forward or send_email. */
  readonly route: string;
  readonly key: string;
  /** SHA-256 of the canonical request. */
  readonly requestHash: string;
  readonly status: "completed";
  readonly submissionId: string;
  readonly messageId: string | null;
  readonly createdAt: Date;
}

/** What a claimed key answers a retry with. */
export interface IdempotencyRecord {
  readonly requestHash: string;
  readonly submissionId: string;
  readonly messageId: string | null;
}

const COLUMNS: Columns<IdempotencyRecordInsert> = [
  ["id", (r) => r.id],
  ["organization_id", (r) => r.organizationId],
  ["route", (r) => r.route],
  ["key", (r) => r.key],
  ["request_hash", (r) => r.requestHash],
  ["status", (r) => r.status],
  ["submission_id", (r) => r.submissionId],
  ["message_id", (r) => r.messageId],
  ["created_at", (r) => r.createdAt],
];

/**
 * The INSERT of the record when `from` yields a row, doing nothing when the key is claimed already (the unique
 * organization, route and key), as a part of a statement that can return the inserted id.
 */
export function idempotencyRecordInsert(record: IdempotencyRecordInsert, from: string): InsertPart {
  const insert = insertFromPart("idempotency_records", COLUMNS, record, from);
  return (bind) => `${insert(bind)} on conflict (organization_id, route, key) do nothing`;
}

/** The statement that reads the record of a key (sqlRead, or a query in a transaction). */
export function idempotencyRecordStatement(organizationId: string, route: string, key: string): { readonly text: string; readonly values: readonly unknown[] } {
  return {
    text: "select request_hash, submission_id, message_id from idempotency_records where organization_id = $1 and route = $2 and key = $3",
    values: [organizationId, route, key],
  };
}

export function idempotencyRecordOf(row: { request_hash: string; submission_id: string; message_id: string | null }): IdempotencyRecord {
  return { requestHash: row.request_hash, submissionId: row.submission_id, messageId: row.message_id };
}

/** The record of a key, read in the caller's transaction; undefined when the key was never claimed. */
export async function findIdempotencyRecord(tx: SqlTx, organizationId: string, route: string, key: string): Promise<IdempotencyRecord | undefined> {
  const { text, values } = idempotencyRecordStatement(organizationId, route, key);
  const [row] = await tx.query<{ request_hash: string; submission_id: string; message_id: string | null }>(text, values);
  return row ? idempotencyRecordOf(row) : undefined;
}
