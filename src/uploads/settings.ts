// The configuration section of uploads and URL attachments: UPLOAD_TTL, LIMIT_UPLOAD_STORAGE_BYTES,
// ATTACHMENT_URL_TIMEOUT_MS and ATTACHMENT_URL_MAX_REDIRECTS, parsed on their own (loadConfig composes the sections).
import { ConfigError, type Config } from "../config.js";

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

const UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * The section from the environment, every bad value named in one ConfigError. Defaults: uploads kept 24 h, 1 GiB of
 * them per organization, a URL fetched within 30 s and through at most 3 redirects.
 */
export function parseUploadSettings(env: Readonly<Record<string, string | undefined>>): UploadSettings {
  const errors: string[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      errors.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return n;
  };
  const duration = (name: string, fallback: string, minMs: number, maxMs: number): number => {
    const raw = env[name] || fallback;
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(raw);
    const ms = m ? Number(m[1]) * UNITS_MS[m[2] as keyof typeof UNITS_MS] : Number.NaN;
    if (!(ms >= minMs && ms <= maxMs)) {
      errors.push(`${name} must be a duration from ${minMs} ms to ${maxMs / 86_400_000} days such as 30m, 24h or 7d, got "${raw}"`);
    }
    return ms;
  };
  const settings: UploadSettings = {
    ttlMs: duration("UPLOAD_TTL", "24h", 1000, 30 * 86_400_000),
    storageBytes: int("LIMIT_UPLOAD_STORAGE_BYTES", 1024 ** 3, 0, 1024 ** 4),
    urlFetch: {
      timeoutMs: int("ATTACHMENT_URL_TIMEOUT_MS", 30_000, 100, 300_000),
      maxRedirects: int("ATTACHMENT_URL_MAX_REDIRECTS", 3, 0, 10),
    },
  };
  if (errors.length > 0) throw new ConfigError(`invalid configuration:\n  ${errors.join("\n  ")}`);
  return Object.freeze(settings);
}

const DEFAULTS = parseUploadSettings({});

/**
 * The section of a configuration: `config.uploads` once loadConfig composes parseUploadSettings into it (until then
 * only a configuration a test built carries it), else the defaults.
 */
export function uploadSettingsOf(config: Config): UploadSettings {
  return (config as Config & { readonly uploads?: UploadSettings }).uploads ?? DEFAULTS;
}
