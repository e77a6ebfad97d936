// Uploads: files an organization keeps for a while to attach to sends by their id (POST /v1/uploads), and the files
// of URL attachments, kept the same way. A file is scanned before it is kept, so only clean files are; it counts
// against the organization's upload storage until it expires (UPLOAD_TTL) or is deleted. Uploads belong to the
// organization, and a key restricted to inboxes sees and uses only those it made.
import { createHash } from "node:crypto";
import type { Principal } from "../auth/principal.js";
import type { Config } from "../config.js";
import type { SqlTx } from "../db/database.js";
import {
  bytesInUseOf,
  deleteUpload as deleteUploadRow,
  findUpload,
  findUploadStatement,
  insertUpload,
  readUploadContent,
  uploadBytesInUse,
  uploadBytesInUseStatement,
  type UploadRecord,
} from "../db/tables/uploads.js";
import type { TenantStore } from "../db/tenant-store.js";
import { InvalidRequest, NotFound, PermissionDenied, TooLarge } from "../errors.js";
import { sanitizeFilename } from "../inbound/attachments.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import { requireCleanFiles, type OutboundScanning } from "../outbound/attachment-scan.js";
import { mediaTypeOf } from "../outbound/media-type.js";
import { createScanner } from "../scanning/configured-scanner.js";
import type { UploadSettings } from "./settings.js";

export type { UploadRecord };

export interface UploadDeps {
  readonly settings: UploadSettings;
  /** platformLimits.messageContentBytes: a larger file could never go with a message. */
  readonly maxFileBytes: number;
  readonly scanning: OutboundScanning;
  readonly now?: () => Date;
}

/** What uploads take from a configuration: their settings, the message size limit and the attachment scanner. */
export function configuredUploadDeps(config: Config, log: Logger): UploadDeps {
  return {
    settings: config.uploads,
    maxFileBytes: config.platformLimits.messageContentBytes,
    scanning: { scanner: createScanner(config.scanning), maxBytes: config.scanning.maxBytes, log },
  };
}

/** A file to keep, as the caller gave it: its name and type are checked and cleaned here. */
export interface NewFile {
  readonly filename: string;
  /** A Content-Type: type/subtype, parameters allowed (dropped); empty for application/octet-stream. */
  readonly contentType: string;
  readonly content: Uint8Array;
  /** Where it came from: an upload, or the URL of a URL attachment. */
  readonly source: { readonly kind: "upload" } | { readonly kind: "url"; readonly url: string };
}

/** An upload with its bytes, as a send takes it. */
export interface UploadedFile {
  readonly upload: UploadRecord;
  readonly content: Buffer;
}

/**
 * Keeps a file: not empty (400), within the file size limit (413 attachment_too_large), scanned clean (422 attachment_infected, 503
 * scan_unavailable), within the organization's upload storage (403 upload_storage_limit_reached), until UPLOAD_TTL
 * from now.
 */
export async function createUpload(store: TenantStore, principal: Principal, file: NewFile, deps: UploadDeps): Promise<UploadRecord> {
  const contentType = mediaTypeOf(file.contentType);
  const size = file.content.byteLength;
  if (size === 0) throw new InvalidRequest("the file is empty");
  if (size > deps.maxFileBytes) {
    throw new TooLarge("attachment_too_large", `the file is ${size} bytes; an attachment may have at most ${deps.maxFileBytes} (platformLimits.messageContentBytes)`);
  }
  const filename = sanitizeFilename(file.filename, 1);
  const now = deps.now?.() ?? new Date();
  // Refused before the scan when it cannot fit anyway; counted again under the organization's lock below.
  const inUse = bytesInUseOf(await store.sqlRead<{ bytes: string }>((organizationId) => uploadBytesInUseStatement(organizationId, now)));
  if (inUse + size > deps.settings.storageBytes) throw storageExceeded(inUse, size, deps.settings);
  await requireCleanFiles(deps.scanning, [{ label: filename, filename, contentType, content: file.content }]);
  const upload: UploadRecord = {
    id: newId("upl"),
    organizationId: store.organizationId,
    createdByKeyId: principal.keyId,
    source: file.source.kind,
    sourceUrl: file.source.kind === "url" ? file.source.url : null,
    filename,
    contentType,
    size,
    sha256: createHash("sha256").update(file.content).digest("hex"),
    scannedAt: now,
    createdAt: now,
    expiresAt: new Date(now.getTime() + deps.settings.ttlMs),
  };
  await store.sqlTransaction(async (tx) => {
    // The bytes go in first and the organization is locked only then, so a large insert never holds the lock; under
    // it, the sum sees every upload committed before and this one.
    await insertUpload(tx, upload, file.content);
    await lockOrganization(tx);
    const bytes = await uploadBytesInUse(tx, tx.organizationId, now);
    if (bytes > deps.settings.storageBytes) throw storageExceeded(bytes - size, size, deps.settings);
  });
  return upload;
}

function storageExceeded(inUse: number, size: number, settings: UploadSettings): PermissionDenied {
  return new PermissionDenied(
    `the organization keeps ${inUse} bytes of uploads; ${size} more would pass its limit of ${settings.storageBytes} (platformLimits.uploadStorageBytes): delete uploads or wait for them to expire`,
    "upload_storage_limit_reached",
  );
}

/**
 * Holds the organization's row until commit, so its uploads are counted one transaction at a time. FOR NO KEY UPDATE
 * (not FOR UPDATE, which createWithinLimit takes): it excludes those, but not the key-share locks that every insert of
 * a row referring to the organization takes, so mail keeps flowing meanwhile.
 */
async function lockOrganization(tx: SqlTx & { readonly organizationId: string }): Promise<void> {
  await tx.query("select 1 from organizations where id = $1 for no key update", [tx.organizationId]);
}

/** An upload the key may see: the organization's, unexpired, and, for a key restricted to inboxes, its own. */
export async function getUpload(store: TenantStore, principal: Principal, id: string, deps: Pick<UploadDeps, "now">): Promise<UploadRecord> {
  const now = deps.now?.() ?? new Date();
  const [upload] = await store.sqlRead<UploadRecord>((organizationId) => findUploadStatement(organizationId, id, now));
  if (!upload || !mayUse(principal, upload)) throw new NotFound("upload");
  return upload;
}

/** Deletes an upload the key may see, freeing its storage. */
export async function deleteUpload(store: TenantStore, principal: Principal, id: string, deps: Pick<UploadDeps, "now">): Promise<void> {
  await getUpload(store, principal, id, deps);
  await store.sqlTransaction((tx) => deleteUploadRow(tx, tx.organizationId, id));
}

/**
 * The uploads a send names, with their bytes, each once: 404 upload_not_found for one that does not exist, expired or
 * is not the key's to use (a key restricted to inboxes uses only its own). With `maxBytes`, uploads larger together
 * are 413 message_too_large before any of their bytes is read.
 */
export async function uploadedFiles(
  store: TenantStore,
  principal: Principal,
  ids: readonly string[],
  deps: Pick<UploadDeps, "now">,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<Map<string, UploadedFile>> {
  const now = deps.now?.() ?? new Date();
  const files = new Map<string, UploadedFile>();
  await store.sqlTransaction(async (tx) => {
    const uploads: UploadRecord[] = [];
    for (const id of new Set(ids)) {
      const upload = await findUpload(tx, tx.organizationId, id, now);
      if (!upload || !mayUse(principal, upload)) throw new NotFound(`upload ${id}`, "upload_not_found");
      uploads.push(upload);
    }
    const size = uploads.reduce((sum, u) => sum + u.size, 0);
    if (size > maxBytes) throw new TooLarge("message_too_large", `the uploads attached are ${size} bytes together; a message may have at most ${maxBytes}`);
    for (const upload of uploads) files.set(upload.id, { upload, content: await readUploadContent(tx, tx.organizationId, upload) });
  });
  return files;
}

function mayUse(principal: Principal, upload: UploadRecord): boolean {
  return principal.inboxIds === null || upload.createdByKeyId === principal.keyId;
}
