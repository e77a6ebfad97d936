// The `uploads` and `upload_chunks` tables' columns and row mapping, for every path that writes or reads them:
// uploads and the files of URL attachments (src/uploads), the expiry reconciler, the test fixtures. An upload's bytes
// are rows of 256 KiB, like a large inbound raw message's: written in one statement, read a few chunks per
// statement, so no answer holds the whole file as hex text (the driver reads bytea as text, two characters a byte).
import type { SqlTx } from "../database.js";
import { insertAll, type Columns } from "./columns.js";

/** An upload as inserted and as read: every column. */
export interface UploadRecord {
  /** upl_<24 hex>. */
  readonly id: string;
  readonly organizationId: string;
  readonly createdByKeyId: string;
  /** upload (POST /v1/uploads) or url (fetched for a URL attachment). */
  readonly source: "upload" | "url";
  readonly sourceUrl: string | null;
  /** Sanitised. */
  readonly filename: string;
  /** type/subtype, lower-cased. */
  readonly contentType: string;
  readonly size: number;
  readonly sha256: string;
  readonly scannedAt: Date;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

const UPLOAD_COLUMNS: Columns<UploadRecord> = [
  ["id", (u) => u.id],
  ["organization_id", (u) => u.organizationId],
  ["created_by_key_id", (u) => u.createdByKeyId],
  ["source", (u) => u.source],
  ["source_url", (u) => u.sourceUrl],
  ["filename", (u) => u.filename],
  ["content_type", (u) => u.contentType],
  ["size", (u) => u.size],
  ["sha256", (u) => u.sha256],
  ["scanned_at", (u) => u.scannedAt],
  ["created_at", (u) => u.createdAt],
  ["expires_at", (u) => u.expiresAt],
];

/** The bytes of one chunk row. */
export const UPLOAD_CHUNK_BYTES = 256 * 1024;
/** Chunks read per statement: 2 MiB of bytes, 4 MiB as the driver's hex text. */
const CHUNKS_PER_READ = 8;

interface ChunkInsert {
  readonly uploadId: string;
  readonly seq: number;
  readonly data: Uint8Array;
}

const CHUNK_COLUMNS: Columns<ChunkInsert> = [
  ["upload_id", (c) => c.uploadId],
  ["seq", (c) => c.seq],
  ["data", (c) => c.data],
];

/** Inserts an upload and its bytes (an empty file has no chunk). */
export async function insertUpload(tx: SqlTx, upload: UploadRecord, content: Uint8Array): Promise<void> {
  await insertAll(tx, "uploads", UPLOAD_COLUMNS, [upload]);
  const chunks: ChunkInsert[] = [];
  for (let offset = 0, seq = 0; offset < content.byteLength; offset += UPLOAD_CHUNK_BYTES, seq++) {
    chunks.push({ uploadId: upload.id, seq, data: content.subarray(offset, offset + UPLOAD_CHUNK_BYTES) });
  }
  await insertAll(tx, "upload_chunks", CHUNK_COLUMNS, chunks);
}

/** The columns of a read, each named as its UploadRecord property: a row read with them is a record. */
export const UPLOAD_SELECT = UPLOAD_COLUMNS.map(([column]) => `"${column}" as "${column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())}"`).join(", ");

/** A statement with its parameters, for TenantStore.sqlRead or a transaction's query. */
export interface Statement {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** The organization's unexpired (at `now`) upload with this id: at most one record. */
export function findUploadStatement(organizationId: string, id: string, now: Date): Statement {
  return { text: `select ${UPLOAD_SELECT} from uploads where id = $1 and organization_id = $2 and expires_at > $3`, values: [id, organizationId, now] };
}

/** Reads an upload of the organization: the unexpired one with this id (at `now`), or undefined. */
export async function findUpload(tx: SqlTx, organizationId: string, id: string, now: Date): Promise<UploadRecord | undefined> {
  const { text, values } = findUploadStatement(organizationId, id, now);
  const [upload] = await tx.query<UploadRecord>(text, values);
  return upload;
}

/** The bytes of an upload of the organization, `size` in all, read CHUNKS_PER_READ chunks per statement. */
export async function readUploadContent(tx: SqlTx, organizationId: string, upload: Pick<UploadRecord, "id" | "size">): Promise<Buffer> {
  const content = Buffer.allocUnsafe(upload.size);
  let filled = 0;
  for (let seq = 0; filled < upload.size; seq += CHUNKS_PER_READ) {
    const rows = await tx.query<{ data: Buffer }>(
      `select c.data from upload_chunks c join uploads u on u.id = c.upload_id
        where c.upload_id = $1 and u.organization_id = $2 and c.seq >= $3 order by c.seq limit ${CHUNKS_PER_READ}`,
      [upload.id, organizationId, seq],
    );
    if (rows.length === 0) break;
    for (const { data } of rows) filled += data.copy(content, filled);
  }
  if (filled !== upload.size) throw new Error(`upload ${upload.id}: ${filled} of ${upload.size} bytes found`);
  return content;
}

/** Bytes of the organization's uploads that have not expired at `now` (what counts against its storage limit). */
export function uploadBytesInUseStatement(organizationId: string, now: Date): Statement {
  return { text: "select coalesce(sum(size), 0)::text as bytes from uploads where organization_id = $1 and expires_at > $2", values: [organizationId, now] };
}

/** The bytes of an uploadBytesInUseStatement answer. */
export function bytesInUseOf(rows: readonly { bytes: string }[]): number {
  return Number(rows[0]?.bytes ?? 0);
}

export async function uploadBytesInUse(tx: SqlTx, organizationId: string, now: Date): Promise<number> {
  const { text, values } = uploadBytesInUseStatement(organizationId, now);
  return bytesInUseOf(await tx.query<{ bytes: string }>(text, values));
}

/** Deletes an upload of the organization (its chunks go with it); answers whether there was one. */
export async function deleteUpload(tx: SqlTx, organizationId: string, id: string): Promise<boolean> {
  const rows = await tx.query("delete from uploads where id = $1 and organization_id = $2 returning 1", [id, organizationId]);
  return rows.length > 0;
}

/** Ids of uploads expired before `now`, oldest first, at most `limit`. */
export async function expiredUploadIds(tx: SqlTx, now: Date, limit: number): Promise<string[]> {
  const rows = await tx.query<{ id: string }>("select id from uploads where expires_at <= $1 order by expires_at limit $2", [now, limit]);
  return rows.map((r) => r.id);
}

/** Deletes an upload if it has expired by `now` (the expiry is checked again in the statement); answers whether it did. */
export async function deleteExpiredUpload(tx: SqlTx, id: string, now: Date): Promise<boolean> {
  const rows = await tx.query("delete from uploads where id = $1 and expires_at <= $2 returning 1", [id, now]);
  return rows.length > 0;
}
