// The files a send attaches, from the three sources of the contract: bytes given inline, an upload's (scanned when it
// was made), a URL fetched once now (kept like an upload). Bounded before anything is trusted: the uploads' sizes are
// read before their bytes, the inline ones are known, and each URL is fetched only within what the message has
// left; the composed message is then checked whole (messageContentBytes). Inline files are scanned here; nothing
// unscanned or infected is ever attached.
import { createHash } from "node:crypto";
import type { Principal } from "../auth/principal.js";
import type { TenantStore } from "../db/tenant-store.js";
import { TooLarge } from "../errors.js";
import { uploadedFiles, type UploadDeps } from "../uploads/uploads.js";
import { requireCleanFiles } from "./attachment-scan.js";
import type { ComposeAttachment } from "./compose.js";
import { mediaTypeOf } from "./media-type.js";
import { keepUrlAttachment, type UrlFetchOptions } from "./url-attachments.js";

/** Where a file's bytes come from: exactly one of the contract's three. */
export type AttachmentSource =
  | { readonly kind: "inline"; readonly content: Uint8Array }
  | { readonly kind: "upload"; readonly uploadId: string }
  | { readonly kind: "url"; readonly url: string };

/** A file as a send names it (OutgoingAttachment). */
export interface AttachmentInput {
  readonly source: AttachmentSource;
  readonly filename?: string | undefined;
  readonly contentType?: string | undefined;
  readonly contentId?: string | undefined;
  readonly disposition?: "inline" | "attachment" | undefined;
}

/** What a send's files need: uploads (settings, scanner, size limit) and the fetcher of URL attachments. */
export interface OutgoingFilesDeps {
  readonly uploads: UploadDeps;
  readonly urlFetch: Omit<UrlFetchOptions, "maxBytes">;
}

/**
 * What identifies a file in the request, for its idempotency: an inline file's SHA-256, an upload's id, a URL, and
 * the attributes given; so an exact retry is known before any upload is read or any URL fetched again.
 */
export function attachmentIdentity(a: AttachmentInput): Record<string, string | undefined> {
  const source =
    a.source.kind === "inline"
      ? { sha256: createHash("sha256").update(a.source.content).digest("hex") }
      : a.source.kind === "upload"
        ? { uploadId: a.source.uploadId }
        : { url: a.source.url };
  return { ...source, filename: a.filename, contentType: a.contentType, contentId: a.contentId, disposition: a.disposition };
}

const label = (i: number, a: AttachmentInput) => `attachments[${i}]${a.filename ? ` (${a.filename})` : ""}`;

/**
 * The files with their bytes, in the order given: 404 upload_not_found, 413 message_too_large when the files alone
 * exceed `budgetBytes`, 422 attachment_infected / 503 scan_unavailable from the scan of inline files, and the
 * refusals of URL fetches (keepUrlAttachment).
 */
export async function resolveAttachments(
  deps: OutgoingFilesDeps,
  store: TenantStore,
  principal: Principal,
  inputs: readonly AttachmentInput[],
  budgetBytes: number,
): Promise<ComposeAttachment[]> {
  if (inputs.length === 0) return [];
  const inline = inputs.flatMap((a, i) => (a.source.kind === "inline" ? [{ i, a, content: a.source.content }] : []));
  const inlineBytes = inline.reduce((sum, f) => sum + f.content.byteLength, 0);
  const tooLarge = (bytes: number) =>
    new TooLarge("message_too_large", `the attachments are ${bytes} bytes or more; platformLimits.messageContentBytes is ${budgetBytes}`);
  if (inlineBytes > budgetBytes) throw tooLarge(inlineBytes);
  const uploadIds = inputs.flatMap((a) => (a.source.kind === "upload" ? [a.source.uploadId] : []));
  const uploads = await uploadedFiles(store, principal, uploadIds, deps.uploads, budgetBytes - inlineBytes);
  let used = inlineBytes + [...uploads.values()].reduce((sum, f) => sum + f.upload.size, 0);
  await requireCleanFiles(
    deps.uploads.scanning,
    inline.map(({ i, a, content }) => ({ label: label(i, a), filename: a.filename ?? "", contentType: mediaTypeOf(a.contentType ?? ""), content })),
  );
  const fetched = new Map<number, { filename: string; contentType: string; content: Uint8Array }>();
  for (const [i, a] of inputs.entries()) {
    if (a.source.kind !== "url") continue;
    if (used >= budgetBytes) throw tooLarge(used);
    const kept = await keepUrlAttachment(store, principal, a.source.url, `attachments[${i}]`, {
      ...deps.uploads,
      maxFileBytes: Math.min(deps.uploads.maxFileBytes, budgetBytes - used),
      fetch: deps.urlFetch,
    });
    used += kept.content.byteLength;
    fetched.set(i, { filename: kept.upload.filename, contentType: kept.upload.contentType, content: kept.content });
  }
  return inputs.map((a, i): ComposeAttachment => {
    const file =
      a.source.kind === "inline"
        ? { filename: a.filename ?? "", contentType: "application/octet-stream", content: a.source.content }
        : a.source.kind === "upload"
          ? { ...uploads.get(a.source.uploadId)!.upload, content: uploads.get(a.source.uploadId)!.content }
          : fetched.get(i)!;
    return {
      filename: a.filename ?? file.filename,
      contentType: a.contentType ?? file.contentType,
      content: file.content,
      contentId: a.contentId,
      disposition: a.disposition,
    };
  });
}
