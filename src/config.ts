// The only reader of process.env: typed, validated once at start, frozen.
import { resolve } from "node:path";

export interface Config {
  /** Port of the API (Connect, gRPC, gRPC-Web and JSON /v1 on one port). */
  readonly httpPort: number;
  /** Address the API and SMTP servers bind to. */
  readonly bindHost: string;
  readonly smtpPort: number;
  /** External PostgreSQL; undefined starts an embedded one under dataDir. */
  readonly databaseUrl: string | undefined;
  /** External Temporal frontend; undefined starts the Temporal dev server under dataDir. */
  readonly temporalAddress: string | undefined;
  readonly temporalNamespace: string;
  readonly temporalTaskQueue: string;
  readonly temporalUiPort: number;
  readonly managedDomain: string;
  readonly dataDir: string;
  /** Where the project installs tools it needs (the temporal CLI). */
  readonly toolsDir: string;
  /** Secret that signs pagination cursors; generated and kept under dataDir when unset. */
  readonly cursorSecret: string | undefined;
  /** How long a resolved API key is trusted before it is read again (revocation takes effect within it). */
  readonly keyCacheMs: number;
  /** How long a rotated key's previous secret keeps working. */
  readonly keyRotationOverlapMs: number;
  /** Defaults for new organizations. */
  readonly defaults: {
    readonly managedLimit: number;
    readonly messagesPerMinute: number;
    readonly messagesPerDay: number;
    readonly recipientsPerDay: number;
    readonly requestsPerMinute: number;
  };
  readonly platformLimits: {
    readonly recipientsPerMessage: number;
    readonly messageContentBytes: number;
    readonly inboxes: number;
    readonly domains: number;
    readonly webhookEndpoints: number;
  };
  /** Bytes of message text and HTML one page of a thread or export may carry before answering 413. */
  readonly maxPageBytes: number;
  /** Batch size of the inbox purge workflow. */
  readonly purgeBatchSize: number;
  readonly logLevel: "debug" | "info" | "warn" | "error";
}

export class ConfigError extends Error {}

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env = process.env): Config {
  const errors: string[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      errors.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return n;
  };
  const str = (name: string, fallback: string, pattern?: RegExp, what?: string): string => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    if (pattern && !pattern.test(raw)) errors.push(`${name} must be ${what}, got "${raw}"`);
    return raw;
  };
  const optional = (name: string, pattern?: RegExp, what?: string): string | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === "") return undefined;
    if (pattern && !pattern.test(raw)) errors.push(`${name} must be ${what}, got "${raw.replace(/:[^:@/]*@/, ":***@")}"`);
    return raw;
  };
  const logLevels = ["debug", "info", "warn", "error"] as const;
  const logLevel = str("LOG_LEVEL", "info", /^(debug|info|warn|error)$/, "one of debug, info, warn, error");

  const dataDir = resolve(str("DATA_DIR", "./.data"));
  const config: Config = {
    httpPort: int("HTTP_PORT", 8080, 0, 65535),
    bindHost: str("BIND_HOST", "127.0.0.1"),
    smtpPort: int("SMTP_PORT", 2525, 0, 65535),
    databaseUrl: optional("DATABASE_URL", /^postgres(ql)?:\/\//, "a postgres:// URL"),
    temporalAddress: optional("TEMPORAL_ADDRESS", /^[\w.-]+:\d+$/, "host:port"),
    temporalNamespace: str("TEMPORAL_NAMESPACE", "default", /^[\w.-]{1,64}$/, "a namespace name"),
    temporalTaskQueue: str("TEMPORAL_TASK_QUEUE", "mailbox", /^[\w.-]{1,64}$/, "a task queue name"),
    temporalUiPort: int("TEMPORAL_UI_PORT", 8233, 0, 65535),
    managedDomain: str(
      "MANAGED_DOMAIN",
      "agents.localhost",
      /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/,
      "a lower-case domain name",
    ),
    dataDir,
    toolsDir: resolve(str("TOOLS_DIR", "./.tools")),
    cursorSecret: optional("CURSOR_SECRET", /^.{32,}$/, "at least 32 characters"),
    keyCacheMs: int("KEY_CACHE_MS", 2000, 0, 5000),
    keyRotationOverlapMs: int("KEY_ROTATION_OVERLAP_S", 86_400, 0, 30 * 86_400) * 1000,
    defaults: {
      managedLimit: int("DEFAULT_MANAGED_LIMIT", 10, 0, 1_000_000),
      messagesPerMinute: int("DEFAULT_MESSAGES_PER_MINUTE", 60, 1, 1_000_000),
      messagesPerDay: int("DEFAULT_MESSAGES_PER_DAY", 1000, 1, 100_000_000),
      recipientsPerDay: int("DEFAULT_RECIPIENTS_PER_DAY", 2000, 1, 100_000_000),
      requestsPerMinute: int("DEFAULT_REQUESTS_PER_MINUTE", 600, 1, 10_000_000),
    },
    platformLimits: {
      recipientsPerMessage: int("LIMIT_RECIPIENTS_PER_MESSAGE", 50, 1, 1000),
      messageContentBytes: int("LIMIT_MESSAGE_CONTENT_BYTES", 10 * 1024 * 1024, 1024, 100 * 1024 * 1024),
      inboxes: int("LIMIT_INBOXES", 1000, 1, 10_000_000),
      domains: int("LIMIT_DOMAINS", 10, 0, 100_000),
      webhookEndpoints: int("LIMIT_WEBHOOK_ENDPOINTS", 10, 0, 1000),
    },
    maxPageBytes: int("MAX_PAGE_BYTES", 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    purgeBatchSize: int("PURGE_BATCH_SIZE", 500, 1, 100_000),
    logLevel: logLevels.find((l) => l === logLevel) ?? "info",
  };
  if (errors.length > 0) throw new ConfigError(`invalid configuration:\n  ${errors.join("\n  ")}`);
  return Object.freeze(config);
}
