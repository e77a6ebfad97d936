// The `attachments` table's columns, for every path that writes attachments: inbound processing stores each
// message's attachments in the batch's transaction, outbound acceptance a sent message's (clean: scanned before the
// send was accepted) in the send's. Scanning changes only their scan columns (src/scanning).
import type { SqlTx } from "../database.js";
import { insertAll, type Columns } from "./columns.js";

/** An attachment as inserted: every column. */
export interface AttachmentInsert {
  /** att_<the message id's hex>_<position> (src/inbound/attachments.ts). */
  readonly id: string;
  readonly organizationId: string;
  readonly inboxId: string;
  readonly messageId: string;
  /** 1-based. */
  readonly position: number;
  /** Sanitised display metadata. */
  readonly filename: string;
  readonly contentType: string;
  readonly content: Uint8Array;
  /** unscanned until a scan's verdict. */
  readonly scanState: string;
  readonly scanDetail: string | null;
  readonly scannedAt: Date | null;
  readonly createdAt: Date;
}

const COLUMNS: Columns<AttachmentInsert> = [
  ["id", (a) => a.id],
  ["organization_id", (a) => a.organizationId],
  ["inbox_id", (a) => a.inboxId],
  ["message_id", (a) => a.messageId],
  ["position", (a) => a.position],
  ["filename", (a) => a.filename],
  ["content_type", (a) => a.contentType],
  ["size", (a) => a.content.byteLength],
  // A Buffer travels as binary (a plain Uint8Array would not).
  ["content", (a) => Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength)],
  ["scan_state", (a) => a.scanState],
  ["scan_detail", (a) => a.scanDetail],
  ["scanned_at", (a) => a.scannedAt],
  ["created_at", (a) => a.createdAt],
];

/** Inserts the attachments in one statement (more only past the parameter limit), the bytes bound as binary. */
export function insertAttachments(tx: SqlTx, attachments: readonly AttachmentInsert[]): Promise<void> {
  return insertAll(tx, "attachments", COLUMNS, attachments);
}
