// The settings of uploads and URL attachments: UPLOAD_TTL, LIMIT_UPLOAD_STORAGE_BYTES, ATTACHMENT_URL_TIMEOUT_MS and
// ATTACHMENT_URL_MAX_REDIRECTS (parsed by loadConfig's uploads section, src/config.ts).

export interface UploadSettings {
  /** How long an upload is kept after it was made (UPLOAD_TTL). */
  readonly ttlMs: number;
  /** Bytes of unexpired uploads one organization may keep (LIMIT_UPLOAD_STORAGE_BYTES): platformLimits.uploadStorageBytes. */
  readonly storageBytes: number;
  /** Fetches of URL attachments. */
  readonly urlFetch: {
    /** The whole fetch, from the first DNS lookup to the last byte of the last answer (ATTACHMENT_URL_TIMEOUT_MS). */
    readonly timeoutMs: number;
    /** Redirects followed, each checked as the first URL is (ATTACHMENT_URL_MAX_REDIRECTS). */
    readonly maxRedirects: number;
  };
}
