// The only reader of process.env: typed, validated once at start, frozen. One small parser per section reads its
// variables (parseSmtp, parseDelivery, …); loadConfig composes them into one Config.
import type { UploadSettings } from "./uploads/settings.js";
import { resolve } from "node:path";
import { getDomain } from "tldts";
import { parseDnsServers } from "./dns/servers.js";
import { parseAddressRanges, type AddressRange } from "./net/address-ranges.js";
import { parseSmtpRoutes, type SmtpRoute } from "./outbound/smtp-routes.js";
import { defaultToolsDir } from "./runtime/tools-dir.js";

export interface Config {
  /** Uploads and URL attachments of outbound mail (UPLOAD_TTL, LIMIT_UPLOAD_STORAGE_BYTES, ATTACHMENT_URL_*). */
  readonly uploads: UploadSettings;
  /** Port of the API (Connect, gRPC, gRPC-Web and JSON /v1 on one port). */
  readonly httpPort: number;
  /** Address the API and SMTP servers bind to. */
  readonly bindHost: string;
  /** Port of /healthz, /readyz and /metrics for any role (STATUS_PORT); undefined: none (the API port serves them). */
  readonly statusPort: number | undefined;
  /** When set, /metrics answers only `Authorization: Bearer <token>` (METRICS_TOKEN). */
  readonly metricsToken: string | undefined;
  /** The API's edge: what one peer may hold and send before it is authenticated, on HTTP/1.1 and h2c alike. */
  readonly api: {
    /** Concurrent TCP connections on the API port; more are closed at once. */
    readonly maxConnections: number;
    /** Concurrent TCP connections from one peer (an IPv4 address, an IPv6 /64); more from it are closed at once. */
    readonly maxConnectionsPerPeer: number;
    /** An HTTP/1.1 request's header section (431 beyond), an h2 request's header list. */
    readonly maxHeaderBytes: number;
    /** How long a client may take to send a request's headers (and a new connection its first bytes). */
    readonly headersTimeoutMs: number;
    /** How long a client may take to send a whole request, headers and body. */
    readonly requestTimeoutMs: number;
    /** The body limit of operations that carry no message content (send and reply may carry twice messageContentBytes). */
    readonly maxRequestBytes: number;
    /** Concurrent streams of one h2 session. */
    readonly h2MaxStreams: number;
    /** Memory one h2 session may use (header tables, buffered frames), in MB; beyond it new streams are refused. */
    readonly h2SessionMemoryMb: number;
    /** Failed authentications of well-formed keys one address (an IPv6 /64) may make per minute before 429. */
    readonly authFailuresPerMinute: number;
  };
  readonly smtpPort: number;
  /** Inbound SMTP: the name it answers with, its STARTTLS certificate, and the limits of one session. */
  readonly smtp: {
    /** Banner and EHLO name. */
    readonly hostname: string;
    /** PEM files of the STARTTLS certificate; both unset → a self-signed one generated under dataDir. */
    readonly tlsCertPath: string | undefined;
    readonly tlsKeyPath: string | undefined;
    readonly maxConnections: number;
    /** Recipients of one transaction; more are answered 452 4.5.3 (the sender retries them later). */
    readonly maxRecipients: number;
    /** Idle time allowed while the server waits for the client. */
    readonly idleTimeoutMs: number;
    /** Whole-connection time limit, however busy the client keeps it. */
    readonly sessionTimeoutMs: number;
    /** Bytes of the header section of the message and of each MIME part. */
    readonly maxHeaderBytes: number;
    readonly maxMimeDepth: number;
    readonly maxMimeParts: number;
    /** Concurrent connections from one client address; one more is answered 421 (Postfix's smtpd_client_connection_count_limit). */
    readonly maxConnectionsPerClient: number;
    /** Refused recipients (5xx at RCPT) in one session; the one that reaches it ends the session with 421. */
    readonly maxRefusedRecipients: number;
    /** Refusals after this many in a session are each answered only after refusalDelayMs (a tarpit for probing). */
    readonly refusalDelayAfter: number;
    readonly refusalDelayMs: number;
    /** Bytes of DATA held in memory across sessions; beyond it (or past 1 MiB for one message) DATA goes to a spool file. */
    readonly receiveMemoryBytes: number;
    /**
     * The load balancers whose connections start with a PROXY protocol (v1 or v2) header, the client IP taken from it
     * (SMTP_PROXY_PROTOCOL with SMTP_PROXY_TRUSTED); undefined: no header is read from anyone.
     */
    readonly proxyTrusted: readonly AddressRange[] | undefined;
  };
  /** Processing of received mail: the parse budget (a parse that exceeds it is stored partial, the raw kept). */
  readonly inbound: {
    readonly parseTimeoutMs: number;
    readonly parseMemoryMb: number;
    /** Messages parsed and stored at once per process (one parser worker thread each). */
    readonly concurrency: number;
    /** Raw bytes the processing thread holds (queued with their bytes, parsing, storing); beyond it only ids wait. */
    readonly processingMemoryBytes: number;
    /** Accepted messages (and their bytes) waiting for processing in one process beyond which MAIL FROM gets 451 4.3.1. */
    readonly maxBacklogMessages: number;
    readonly maxBacklogBytes: number;
    /**
     * The in-flow delay (INBOUND_INFLOW_DELAY=on|off): while the backlog holds more than markMs of storing at the
     * measured storing rate, MAIL FROM waits for a message to be stored (at most maxDelayMs), so acceptance keeps to
     * the rate storing keeps.
     */
    readonly inFlow: { readonly enabled: boolean; readonly markMs: number; readonly maxDelayMs: number };
    /** SPF, DKIM, DMARC and ARC of every message at receipt (INBOUND_AUTHENTICATION=on|off); off stores not_evaluated. */
    readonly authentication: boolean;
    /** One message's sender authentication, DNS included; what is unfinished then is temperror. */
    readonly authenticationTimeoutMs: number;
  };
  /** External PostgreSQL; undefined starts an embedded one under dataDir. */
  readonly databaseUrl: string | undefined;
  /** External Temporal frontend; undefined starts the Temporal dev server under dataDir. */
  readonly temporalAddress: string | undefined;
  readonly temporalNamespace: string;
  readonly temporalTaskQueue: string;
  /** How an external Temporal is reached: TLS (mTLS with a client certificate) and an API key (Temporal Cloud). */
  readonly temporalAccess: TemporalAccess;
  /** TLS and pool size of the PostgreSQL connections (DATABASE_SSL_MODE, DATABASE_SSL_CA, DATABASE_POOL_MAX). */
  readonly database: DatabaseSettings;
  /** How long SIGTERM may take: requests, sessions and activities in flight get this long, then the process exits. */
  readonly shutdownTimeoutMs: number;
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
  /** WaitForMessage: waits one API key, and one API process, may hold at once (429 too_many_waits, 503 beyond). */
  readonly waits: { readonly perKey: number; readonly perProcess: number };
  /** StreamEvents: streams one key and one process may hold at once, and the silence before a keep-alive. */
  readonly streams: { readonly perKey: number; readonly perProcess: number; readonly keepAliveMs: number };
  /** How long the event log keeps an event for streams to resume from (EVENT_RETENTION). */
  readonly eventRetentionMs: number;
  /** Batch size of the inbox purge workflow. */
  readonly purgeBatchSize: number;
  /** Attachment scanning: clamd when an address is set, else the built-in scanner. */
  readonly scanning: {
    /** `host:port` or `unix:/path` of clamd; undefined uses the built-in scanner. */
    readonly clamdAddress: string | undefined;
    /** Longest one attachment's scan may take; a slower scan is an error verdict, never clean. */
    readonly timeoutMs: number;
    /** Larger attachments are not scanned: an error verdict (keep it within clamd's StreamMaxLength). */
    readonly maxBytes: number;
    /** Wait before the first retry of a scanner error verdict; each next wait is three times the last. */
    readonly errorRetryInitialMs: number;
  };
  /** Webhook delivery: the request timeout, the retry schedule, and how long a create's secret may be replayed. */
  readonly webhooks: {
    /** Hosts exempt from the public-address check (development and tests only). */
    readonly allowHosts: readonly string[];
    readonly timeoutMs: number;
    /** Attempts per delivery, the first included; then the delivery is dropped. */
    readonly maxAttempts: number;
    /** Wait after the first failed attempt; it doubles (with jitter) up to retryMaxMs. */
    readonly retryInitialMs: number;
    readonly retryMaxMs: number;
    readonly secretReplayMs: number;
  };
  /** DNS resolvers (DNS_SERVERS, IP:port list); undefined uses the system's. */
  readonly dnsServers: readonly { readonly host: string; readonly port: number }[] | undefined;
  /** How long one DNS attempt waits for an answer. */
  readonly dnsTimeoutMs: number;
  /** How long a cached lookup keeps a resolution failure (RFC 9520); 0 keeps none. */
  readonly dnsFailureCacheSeconds: number;
  /** Customer domains: the records they publish and how long a verification holds. */
  readonly customerDomains: {
    /** Where their MX records point: the host of inbound SMTP. */
    readonly inboundMxHost: string;
    /** The SPF include suggested to them. */
    readonly spfInclude: string;
    /** Records are re-checked this long after the last check (DOMAIN_VERIFY_REFRESH). */
    readonly refreshMs: number;
    /** How long a temporary DNS failure keeps a verified capability (DOMAIN_VERIFY_GRACE). */
    readonly graceMs: number;
    /** Encrypts DKIM private keys at rest; generated into dataDir when unset. */
    readonly dkimKeySecret: string | undefined;
  };
  /** Outbound delivery: routing, the retry schedule and the queue lifetime of deferred recipients. */
  readonly delivery: {
    /** SMTP_ROUTES transport map; domains without a route go to their MX hosts (the managed domain to our own SMTP). */
    readonly routes: readonly SmtpRoute[];
    /** MX hosts (names or addresses) exempt from the public-address check (development and tests only). */
    readonly allowHosts: readonly string[];
    /** Wait after the first deferral; it doubles up to retryMaxMs (DELIVERY_RETRY_INITIAL / DELIVERY_RETRY_MAX). */
    readonly retryInitialMs: number;
    readonly retryMaxMs: number;
    /** How long a deferred recipient is retried before it fails (DELIVERY_QUEUE_LIFETIME, default 5d). */
    readonly queueLifetimeMs: number;
    /** Connection, greeting and per-command timeout of one delivery attempt. */
    readonly timeoutMs: number;
    /** DKIM selector of the managed domain's key. */
    readonly managedDkimSelector: string;
    /** PEM private key that signs managed-domain mail; unset → one generated and kept under dataDir. */
    readonly managedDkimKeyPath: string | undefined;
    /** How long a kept SMTP connection to a next hop may stay idle before it is closed (DELIVERY_CONNECTION_IDLE_MS). */
    readonly connectionIdleMs: number;
    /** First attempts a worker runs at once (DELIVERY_CONCURRENCY); more submissions wait, pending, in order. */
    readonly concurrency: number;
    /** The longest a submission should wait for its first attempt; sends are refused (503) past half (DELIVERY_BACKLOG_MAX_S). */
    readonly backlogMaxMs: number;
    /** How long a held send waits for a person's decision before it is rejected as hold_expired (HOLD_TIMEOUT, default 72h). */
    readonly holdTimeoutMs: number;
    /**
     * Which deliveries are Temporal workflows (DELIVERY_WORKFLOWS): `deferred` (default), only those whose first
     * attempt by the delivery queue left recipients deferred; `all`, every one, its first attempt made by the
     * workflow. Held sends always have one.
     */
    readonly workflows: DeliveryWorkflows;
  };
  /** Where ARF feedback reports (RFC 5965) are received; each believed one adds a complaint and a suppression. */
  readonly feedbackAddress: string;
  /** Feedback loops believed about any recipient (FEEDBACK_LOOP_SENDERS): authenticated domains or addresses. */
  readonly feedbackLoopSenders: readonly string[];
  readonly logLevel: "debug" | "info" | "warn" | "error";
  /** `mailbox mcp`: the service it relays MCP over stdio to (MAILBOX_URL), and the key it calls with (MAILBOX_API_KEY). */
  readonly mcpBridge: { readonly url: string; readonly apiKey: string | undefined };
}

/** DELIVERY_WORKFLOWS: which deliveries run as Temporal workflows. */
export const DELIVERY_WORKFLOWS = ["deferred", "all"] as const;
export type DeliveryWorkflows = (typeof DELIVERY_WORKFLOWS)[number];

/** Paths are read when connecting; tls undefined means plaintext. */
export interface TemporalAccess {
  readonly tls:
    | {
        /** PEM client certificate and key (mTLS); both or neither. */
        readonly certPath: string | undefined;
        readonly keyPath: string | undefined;
        /** PEM CA that signed the server's certificate; undefined trusts the system's CAs. */
        readonly caPath: string | undefined;
        /** The name the server's certificate is checked against, when it is not the address's host. */
        readonly serverName: string | undefined;
      }
    | undefined;
  readonly apiKey: string | undefined;
}

export type DatabaseSslMode = "disable" | "require" | "verify-ca" | "verify-full";

export interface DatabaseSettings {
  /** undefined: what DATABASE_URL's sslmode says (no TLS without one). */
  readonly sslMode: DatabaseSslMode | undefined;
  /** PEM CA of the server's certificate (else DATABASE_URL's sslrootcert, else the system's CAs). */
  readonly sslCaPath: string | undefined;
  /** Connections of each of a process's pools (the ORM's and the plain-SQL one). */
  readonly poolMax: number;
}

export class ConfigError extends Error {}

/**
 * The feedback loops of the big providers: Yahoo's Complaint Feedback Loop (for Yahoo and AOL users) sends as
 * feedback@arf.mail.yahoo.com, signed by arf.mail.yahoo.com; Microsoft's JMRP (Outlook.com, Hotmail, Live) from
 * staff@hotmail.com.
 */
const DEFAULT_FEEDBACK_LOOP_SENDERS = "arf.mail.yahoo.com,staff@hotmail.com";

type Env = Readonly<Record<string, string | undefined>>;

/** A lower-case domain or host name: dot-separated labels of letters, digits and inner hyphens. */
const DOMAIN_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;
const DURATION_UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Reads variables of one environment by kind; what is wrong is collected, so one ConfigError names all of it. */
class EnvReader {
  readonly errors: string[] = [];
  constructor(readonly env: Env) {}

  fail(message: string): void {
    this.errors.push(message);
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === "") return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.fail(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return n;
  }

  str(name: string, fallback: string, pattern?: RegExp, what?: string): string {
    const raw = this.env[name];
    if (raw === undefined || raw === "") return fallback;
    if (pattern && !pattern.test(raw)) this.fail(`${name} must be ${what}, got "${raw}"`);
    return raw;
  }

  /** Unset or empty is undefined; a bad value is echoed with any URL password masked. */
  optional(name: string, pattern?: RegExp, what?: string): string | undefined {
    const raw = this.env[name];
    if (raw === undefined || raw === "") return undefined;
    if (pattern && !pattern.test(raw)) this.fail(`${name} must be ${what}, got "${raw.replace(/:[^:@/]*@/, ":***@")}"`);
    return raw;
  }

  /** An optional file path, made absolute against the working directory. */
  path(name: string): string | undefined {
    const raw = this.optional(name);
    return raw && resolve(raw);
  }

  /** One of `choices`, `fallback` when unset. */
  choice<T extends string>(name: string, choices: readonly T[], fallback: T): T {
    const raw = this.str(name, fallback, new RegExp(`^(${choices.join("|")})$`), `one of ${choices.join(", ")}`);
    return choices.find((c) => c === raw) ?? fallback;
  }

  /** true or false, "false" when unset. */
  flag(name: string): boolean {
    return this.str(name, "false", /^(true|false)$/, "true or false") === "true";
  }

  /** A duration such as 500ms, 5s, 30m, 6h or 3d. */
  duration(name: string, fallback: string, minMs: number): number {
    const raw = this.env[name] || fallback;
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(raw);
    const ms = m ? Number(m[1]) * DURATION_UNIT_MS[m[2] as keyof typeof DURATION_UNIT_MS] : Number.NaN;
    if (!(ms >= minMs)) this.fail(`${name} must be a duration of at least ${minMs} ms such as 30s, 6h or 3d, got "${raw}"`);
    return ms;
  }

  /** A comma list of host names and IP addresses, trimmed and lower-cased. */
  hostList(name: string): string[] {
    const hosts = (this.env[name] ?? "").split(",").map((h) => h.trim().toLowerCase()).filter((h) => h !== "");
    for (const host of hosts) if (!/^[a-z0-9.:-]+$/.test(host)) this.fail(`${name} must list host names or IP addresses, got "${host}"`);
    return hosts;
  }
}

/** Where the process keeps its data and tools, how it logs, how long it may take to stop, the domain it serves. */
function parseProcess(r: EnvReader): Pick<Config, "logLevel" | "dataDir" | "toolsDir" | "bindHost" | "shutdownTimeoutMs" | "managedDomain"> {
  return {
    logLevel: r.choice("LOG_LEVEL", ["debug", "info", "warn", "error"], "info"),
    dataDir: resolve(r.str("DATA_DIR", "./.data")),
    toolsDir: resolve(r.str("TOOLS_DIR", defaultToolsDir())),
    bindHost: r.str("BIND_HOST", "127.0.0.1"),
    shutdownTimeoutMs: r.int("SHUTDOWN_TIMEOUT_MS", 30_000, 1000, 3_600_000),
    managedDomain: r.str("MANAGED_DOMAIN", "agents.localhost", DOMAIN_NAME, "a lower-case domain name"),
  };
}

/** The API port and its edge limits, and /healthz, /readyz, /metrics. */
function parseHttp(r: EnvReader): Pick<Config, "httpPort" | "statusPort" | "metricsToken" | "api"> {
  const headersTimeoutMs = r.int("API_HEADERS_TIMEOUT_MS", 10_000, 100, 600_000);
  const requestTimeoutMs = r.int("API_REQUEST_TIMEOUT_MS", 120_000, 100, 3_600_000);
  if (requestTimeoutMs < headersTimeoutMs) r.fail("API_REQUEST_TIMEOUT_MS must not be below API_HEADERS_TIMEOUT_MS");
  const metricsToken = r.optional("METRICS_TOKEN");
  // Not echoed: the value is a secret.
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,}$/.test(metricsToken)) r.fail("METRICS_TOKEN must be at least 16 printable characters without spaces");
  return {
    httpPort: r.int("HTTP_PORT", 8080, 0, 65535),
    statusPort: r.env.STATUS_PORT === undefined || r.env.STATUS_PORT === "" ? undefined : r.int("STATUS_PORT", 0, 0, 65535),
    metricsToken,
    api: {
      maxConnections: r.int("API_MAX_CONNECTIONS", 1000, 1, 1_000_000),
      maxConnectionsPerPeer: r.int("API_MAX_CONNECTIONS_PER_PEER", 100, 1, 1_000_000),
      maxHeaderBytes: r.int("API_MAX_HEADER_BYTES", 16 * 1024, 1024, 1024 * 1024),
      headersTimeoutMs,
      requestTimeoutMs,
      maxRequestBytes: r.int("API_MAX_REQUEST_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
      h2MaxStreams: r.int("API_H2_MAX_STREAMS", 100, 1, 10_000),
      h2SessionMemoryMb: r.int("API_H2_SESSION_MEMORY_MB", 10, 1, 1024),
      authFailuresPerMinute: r.int("API_AUTH_FAILURES_PER_MINUTE", 100, 1, 1_000_000),
    },
  };
}

/** API keys, pagination cursors and pages, waits, event streams and the event log they read. */
function parseApiCalls(r: EnvReader): Pick<Config, "cursorSecret" | "keyCacheMs" | "keyRotationOverlapMs" | "maxPageBytes" | "waits" | "streams" | "eventRetentionMs"> {
  return {
    cursorSecret: r.optional("CURSOR_SECRET", /^.{32,}$/, "at least 32 characters"),
    keyCacheMs: r.int("KEY_CACHE_MS", 2000, 0, 5000),
    keyRotationOverlapMs: r.int("KEY_ROTATION_OVERLAP_S", 86_400, 0, 30 * 86_400) * 1000,
    maxPageBytes: r.int("MAX_PAGE_BYTES", 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    waits: {
      perKey: r.int("WAIT_MAX_PER_KEY", 10, 1, 10_000),
      perProcess: r.int("WAIT_MAX_PER_PROCESS", 500, 1, 1_000_000),
    },
    streams: {
      perKey: r.int("STREAM_MAX_PER_KEY", 5, 1, 10_000),
      perProcess: r.int("STREAM_MAX_PER_PROCESS", 500, 1, 1_000_000),
      keepAliveMs: r.int("STREAM_KEEPALIVE_S", 15, 1, 300) * 1000,
    },
    eventRetentionMs: r.duration("EVENT_RETENTION", "72h", 60_000),
  };
}

/** Inbound SMTP: its port, the name it answers with, its STARTTLS certificate, the limits of one session. */
function parseSmtp(r: EnvReader, managedDomain: string): Pick<Config, "smtpPort" | "smtp"> {
  const tlsCertPath = r.path("SMTP_TLS_CERT");
  const tlsKeyPath = r.path("SMTP_TLS_KEY");
  if ((tlsCertPath === undefined) !== (tlsKeyPath === undefined)) r.fail("SMTP_TLS_CERT and SMTP_TLS_KEY must be set together");
  // A PROXY header names any address its sender likes: it is read from the operator's load balancers only.
  const proxyProtocol = r.flag("SMTP_PROXY_PROTOCOL");
  const proxyTrusted = parseAddressRanges(r.env.SMTP_PROXY_TRUSTED ?? "");
  if (proxyTrusted.invalid.length > 0) r.fail(`SMTP_PROXY_TRUSTED must list IP addresses or CIDR ranges such as 10.0.0.0/8, got "${proxyTrusted.invalid.join(",")}"`);
  else if (proxyProtocol !== proxyTrusted.ranges.length > 0) {
    r.fail("SMTP_PROXY_PROTOCOL=true and SMTP_PROXY_TRUSTED (the load balancers' addresses or ranges, which alone may send the header) go together");
  }
  return {
    smtpPort: r.int("SMTP_PORT", 2525, 0, 65535),
    smtp: {
      hostname: r.str("SMTP_HOSTNAME", managedDomain, DOMAIN_NAME, "a lower-case host name"),
      tlsCertPath,
      tlsKeyPath,
      maxConnections: r.int("SMTP_MAX_CONNECTIONS", 100, 1, 100_000),
      maxRecipients: r.int("SMTP_MAX_RECIPIENTS", 100, 1, 10_000),
      idleTimeoutMs: r.int("SMTP_IDLE_TIMEOUT_MS", 60_000, 1000, 3_600_000),
      sessionTimeoutMs: r.int("SMTP_SESSION_TIMEOUT_MS", 600_000, 1000, 86_400_000),
      maxHeaderBytes: r.int("SMTP_MAX_HEADER_BYTES", 256 * 1024, 1024, 16 * 1024 * 1024),
      maxMimeDepth: r.int("SMTP_MAX_MIME_DEPTH", 20, 1, 1000),
      // At most 1000: attachment ids number a message's attachments 1..999 (spec id shape).
      maxMimeParts: r.int("SMTP_MAX_MIME_PARTS", 500, 1, 1000),
      maxConnectionsPerClient: r.int("SMTP_MAX_CONNECTIONS_PER_CLIENT", 20, 1, 100_000),
      maxRefusedRecipients: r.int("SMTP_MAX_REFUSED_RECIPIENTS", 20, 1, 10_000),
      refusalDelayAfter: r.int("SMTP_REFUSAL_DELAY_AFTER", 10, 0, 10_000),
      refusalDelayMs: r.int("SMTP_REFUSAL_DELAY_MS", 1000, 0, 60_000),
      receiveMemoryBytes: r.int("SMTP_RECEIVE_MEMORY_BYTES", 32 * 1024 * 1024, 1024 * 1024, 64 * 1024 * 1024 * 1024),
      proxyTrusted: proxyProtocol ? proxyTrusted.ranges : undefined,
    },
  };
}

/** Processing of received mail: the parse budget, its concurrency, and the backlog that pushes back on senders. */
function parseInbound(r: EnvReader): Pick<Config, "inbound"> {
  return {
    inbound: {
      parseTimeoutMs: r.int("INBOUND_PARSE_TIMEOUT_MS", 15_000, 10, 600_000),
      parseMemoryMb: r.int("INBOUND_PARSE_MEMORY_MB", 256, 16, 16_384),
      concurrency: r.int("INBOUND_CONCURRENCY", 2, 1, 64),
      processingMemoryBytes: r.int("INBOUND_PROCESSING_MEMORY_BYTES", 64 * 1024 * 1024, 1024 * 1024, 64 * 1024 * 1024 * 1024),
      maxBacklogMessages: r.int("INBOUND_MAX_BACKLOG", 50_000, 1, 10_000_000),
      maxBacklogBytes: r.int("INBOUND_MAX_BACKLOG_BYTES", 1024 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024 * 1024),
      inFlow: {
        enabled: r.str("INBOUND_INFLOW_DELAY", "on", /^(on|off)$/, "on or off") === "on",
        markMs: r.int("INBOUND_INFLOW_MARK_MS", 1000, 100, 600_000),
        // Far below RFC 5321's 5-minute MAIL FROM timeout (4.5.3.2.2); held under SMTP_IDLE_TIMEOUT_MS where it is used.
        maxDelayMs: r.int("INBOUND_INFLOW_MAX_DELAY_MS", 10_000, 10, 60_000),
      },
      authentication: r.str("INBOUND_AUTHENTICATION", "on", /^(on|off)$/, "on or off") === "on",
      authenticationTimeoutMs: r.int("INBOUND_AUTHENTICATION_TIMEOUT_MS", 5000, 100, 60_000),
    },
  };
}

/** An external PostgreSQL (else the embedded one), its TLS, and the size of each pool. */
function parseDatabase(r: EnvReader): Pick<Config, "databaseUrl" | "database"> {
  const databaseUrl = r.optional("DATABASE_URL", /^postgres(ql)?:\/\//, "a postgres:// URL");
  const sslMode = r.optional("DATABASE_SSL_MODE", /^(disable|require|verify-ca|verify-full)$/, "one of disable, require, verify-ca, verify-full");
  const sslCaPath = r.path("DATABASE_SSL_CA");
  if ((sslMode !== undefined || sslCaPath !== undefined) && databaseUrl === undefined) {
    r.fail("DATABASE_SSL_MODE and DATABASE_SSL_CA need DATABASE_URL (the embedded PostgreSQL is local)");
  }
  return {
    databaseUrl,
    database: { sslMode: sslMode as DatabaseSslMode | undefined, sslCaPath, poolMax: r.int("DATABASE_POOL_MAX", 20, 1, 1000) },
  };
}

/** An external Temporal (else the embedded dev server), how it is reached, the namespace, task queue and Web UI port. */
function parseTemporal(
  r: EnvReader,
): Pick<Config, "temporalAddress" | "temporalNamespace" | "temporalTaskQueue" | "temporalAccess" | "temporalUiPort" | "purgeBatchSize"> {
  const temporalAddress = r.optional("TEMPORAL_ADDRESS", /^[\w.-]+:\d+$/, "host:port");
  const certPath = r.path("TEMPORAL_TLS_CERT");
  const keyPath = r.path("TEMPORAL_TLS_KEY");
  if ((certPath === undefined) !== (keyPath === undefined)) r.fail("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY must be set together");
  const caPath = r.path("TEMPORAL_TLS_CA");
  const serverName = r.optional("TEMPORAL_TLS_SERVER_NAME", /^[a-zA-Z0-9.-]{1,253}$/, "a host name");
  const apiKey = r.optional("TEMPORAL_API_KEY");
  const tlsFlag = r.optional("TEMPORAL_TLS", /^(true|false)$/, "true or false");
  // An API key goes over TLS only (Temporal Cloud); TEMPORAL_TLS=true alone is TLS against the system's CAs.
  const tls = tlsFlag === "false" ? false : tlsFlag === "true" || [certPath, caPath, serverName, apiKey].some((v) => v !== undefined);
  if (tlsFlag === "false" && apiKey !== undefined) r.fail("TEMPORAL_API_KEY needs TLS: unset TEMPORAL_TLS=false");
  if (tls && temporalAddress === undefined) r.fail("TEMPORAL_TLS* and TEMPORAL_API_KEY need TEMPORAL_ADDRESS (the embedded Temporal is plaintext)");
  return {
    temporalAddress,
    temporalNamespace: r.str("TEMPORAL_NAMESPACE", "default", /^[\w.-]{1,64}$/, "a namespace name"),
    temporalTaskQueue: r.str("TEMPORAL_TASK_QUEUE", "mailbox", /^[\w.-]{1,64}$/, "a task queue name"),
    temporalAccess: { tls: tls ? { certPath, keyPath, caPath, serverName } : undefined, apiKey },
    temporalUiPort: r.int("TEMPORAL_UI_PORT", 8233, 0, 65535),
    purgeBatchSize: r.int("PURGE_BATCH_SIZE", 500, 1, 100_000),
  };
}

/** Defaults for new organizations, and the platform's limits on everything. */
function parseLimits(r: EnvReader): Pick<Config, "defaults" | "platformLimits"> {
  return {
    defaults: {
      managedLimit: r.int("DEFAULT_MANAGED_LIMIT", 10, 0, 1_000_000),
      messagesPerMinute: r.int("DEFAULT_MESSAGES_PER_MINUTE", 60, 1, 1_000_000),
      messagesPerDay: r.int("DEFAULT_MESSAGES_PER_DAY", 1000, 1, 100_000_000),
      recipientsPerDay: r.int("DEFAULT_RECIPIENTS_PER_DAY", 2000, 1, 100_000_000),
      requestsPerMinute: r.int("DEFAULT_REQUESTS_PER_MINUTE", 600, 1, 10_000_000),
    },
    platformLimits: {
      recipientsPerMessage: r.int("LIMIT_RECIPIENTS_PER_MESSAGE", 50, 1, 1000),
      messageContentBytes: r.int("LIMIT_MESSAGE_CONTENT_BYTES", 10 * 1024 * 1024, 1024, 100 * 1024 * 1024),
      inboxes: r.int("LIMIT_INBOXES", 1000, 1, 10_000_000),
      domains: r.int("LIMIT_DOMAINS", 10, 0, 100_000),
      webhookEndpoints: r.int("LIMIT_WEBHOOK_ENDPOINTS", 10, 0, 1000),
    },
  };
}

/** Attachment scanning: clamd when an address is set, else the built-in scanner. */
function parseScanning(r: EnvReader): Pick<Config, "scanning"> {
  return {
    scanning: {
      clamdAddress: r.optional("CLAMD_ADDRESS", /^(unix:\/.+|[\w.-]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5})$/, "host:port or unix:/path"),
      timeoutMs: r.int("SCAN_TIMEOUT_MS", 60_000, 100, 600_000),
      maxBytes: r.int("SCAN_MAX_BYTES", 25 * 1024 * 1024, 1024, 512 * 1024 * 1024),
      errorRetryInitialMs: r.int("SCAN_ERROR_RETRY_INITIAL_MS", 2000, 10, 60_000),
    },
  };
}

/** Webhook delivery: the request timeout, the retry schedule, how long a create's secret may be replayed. */
function parseWebhooks(r: EnvReader): Pick<Config, "webhooks"> {
  const allowHosts = r.hostList("WEBHOOK_ALLOW_HOSTS");
  const retryInitialMs = r.int("WEBHOOK_RETRY_INITIAL_MS", 30_000, 10, 3_600_000);
  const retryMaxMs = r.int("WEBHOOK_RETRY_MAX_MS", 3_600_000, 10, 86_400_000);
  if (retryMaxMs < retryInitialMs) r.fail("WEBHOOK_RETRY_MAX_MS must not be below WEBHOOK_RETRY_INITIAL_MS");
  return {
    webhooks: {
      allowHosts,
      timeoutMs: r.int("WEBHOOK_TIMEOUT_MS", 10_000, 100, 60_000),
      maxAttempts: r.int("WEBHOOK_MAX_ATTEMPTS", 10, 1, 50),
      retryInitialMs,
      retryMaxMs,
      secretReplayMs: r.int("WEBHOOK_SECRET_REPLAY_S", 86_400, 0, 30 * 86_400) * 1000,
    },
  };
}

/**
 * The DNS resolvers every lookup goes to (the system's when unset), how long one attempt waits, and how long a
 * cached lookup keeps a failure: RFC 9520 §3.2 asks at least 1 s and at most 5 min.
 */
function parseDns(r: EnvReader): Pick<Config, "dnsServers" | "dnsTimeoutMs" | "dnsFailureCacheSeconds"> {
  const list = r.optional("DNS_SERVERS");
  const parsed = list === undefined ? undefined : parseDnsServers(list);
  if (parsed && (parsed.invalid.length > 0 || parsed.servers.length === 0)) r.fail(`DNS_SERVERS must list IP:port addresses, got "${list}"`);
  return {
    dnsServers: parsed?.servers,
    dnsTimeoutMs: r.int("DNS_TIMEOUT_MS", 2000, 10, 30_000),
    dnsFailureCacheSeconds: r.int("DNS_FAILURE_CACHE_SECONDS", 30, 0, 300),
  };
}

/** Customer domains: the records they publish, how long a verification holds, the key that seals their DKIM keys. */
function parseCustomerDomains(r: EnvReader, managedDomain: string): Pick<Config, "customerDomains"> {
  return {
    customerDomains: {
      inboundMxHost: r.str("INBOUND_MX_HOST", `mx.${managedDomain}`, DOMAIN_NAME, "a lower-case host name"),
      spfInclude: r.str("SPF_INCLUDE", `_spf.${managedDomain}`, /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/, "a lower-case domain name"),
      refreshMs: r.duration("DOMAIN_VERIFY_REFRESH", "6h", 1000),
      graceMs: r.duration("DOMAIN_VERIFY_GRACE", "72h", 0),
      dkimKeySecret: r.optional("DKIM_KEY_SECRET", /^.{32,}$/, "at least 32 characters"),
    },
  };
}

/** Outbound delivery: routing, the retry schedule and queue lifetime, the managed DKIM key, the first-attempt queue. */
function parseDelivery(r: EnvReader): Pick<Config, "delivery"> {
  const routes = parseSmtpRoutes(r.env.SMTP_ROUTES ?? "");
  if (routes.invalid.length > 0) r.fail(`SMTP_ROUTES must list domain=host:port entries (domain or *), got "${routes.invalid.join(",")}"`);
  const retryInitialMs = r.duration("DELIVERY_RETRY_INITIAL", "1m", 10);
  const retryMaxMs = r.duration("DELIVERY_RETRY_MAX", "1h", 10);
  if (retryMaxMs < retryInitialMs) r.fail("DELIVERY_RETRY_MAX must not be below DELIVERY_RETRY_INITIAL");
  return {
    delivery: {
      routes: routes.routes,
      allowHosts: r.hostList("DELIVERY_ALLOW_HOSTS"),
      retryInitialMs,
      retryMaxMs,
      queueLifetimeMs: r.duration("DELIVERY_QUEUE_LIFETIME", "5d", 1000),
      timeoutMs: r.int("DELIVERY_TIMEOUT_MS", 30_000, 100, 600_000),
      managedDkimSelector: r.str("MANAGED_DKIM_SELECTOR", "mbx1", /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, "a DNS label"),
      managedDkimKeyPath: r.path("MANAGED_DKIM_KEY"),
      connectionIdleMs: r.int("DELIVERY_CONNECTION_IDLE_MS", 5_000, 100, 300_000),
      concurrency: r.int("DELIVERY_CONCURRENCY", 32, 1, 10_000),
      backlogMaxMs: r.int("DELIVERY_BACKLOG_MAX_S", 10, 2, 86_400) * 1000,
      holdTimeoutMs: r.duration("HOLD_TIMEOUT", "72h", 1000),
      workflows: r.choice("DELIVERY_WORKFLOWS", DELIVERY_WORKFLOWS, "deferred"),
    },
  };
}

/** Where ARF feedback reports are received, and the feedback loops believed about any recipient. */
function parseFeedback(r: EnvReader, managedDomain: string): Pick<Config, "feedbackAddress" | "feedbackLoopSenders"> {
  const senders = (r.env.FEEDBACK_LOOP_SENDERS || DEFAULT_FEEDBACK_LOOP_SENDERS).split(",").map((s) => s.trim().toLowerCase());
  return {
    feedbackAddress: r.str("FEEDBACK_ADDRESS", `feedback@${managedDomain}`, /^[a-z0-9._+-]+@[a-z0-9.-]+$/, "a lower-case address"),
    feedbackLoopSenders: senders.filter((entry) => {
      if (entry === "") return false;
      // A domain or one address; not a public suffix (com, co.uk), which would trust everyone below it.
      const domain = entry.slice(entry.lastIndexOf("@") + 1);
      const ok = /^([a-z0-9._+-]+@)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(entry) && getDomain(domain, { allowPrivateDomains: true }) !== null;
      if (!ok) r.fail(`FEEDBACK_LOOP_SENDERS must list domains or addresses, got "${entry}"`);
      return ok;
    }),
  };
}

/** `mailbox mcp`: the service it relays MCP over stdio to, and the key it calls with. */
function parseUploads(r: EnvReader): Pick<Config, "uploads"> {
  const ttlMs = r.duration("UPLOAD_TTL", "24h", 1000);
  if (ttlMs > 30 * 86_400_000) r.fail(`UPLOAD_TTL must be at most 30d, got "${r.env.UPLOAD_TTL}"`);
  return {
    uploads: {
      ttlMs,
      storageBytes: r.int("LIMIT_UPLOAD_STORAGE_BYTES", 1024 ** 3, 0, 1024 ** 4),
      urlFetch: {
        timeoutMs: r.int("ATTACHMENT_URL_TIMEOUT_MS", 30_000, 100, 300_000),
        maxRedirects: r.int("ATTACHMENT_URL_MAX_REDIRECTS", 3, 0, 10),
      },
    },
  };
}

function parseMcpBridge(r: EnvReader): Pick<Config, "mcpBridge"> {
  return {
    mcpBridge: {
      url: r.str("MAILBOX_URL", `http://127.0.0.1:${r.env.HTTP_PORT || 8080}`, /^https?:\/\/[^/?#]+\/?$/, "an http(s) URL of the service (scheme and host)"),
      apiKey: r.optional("MAILBOX_API_KEY"),
    },
  };
}

/** The configuration of `env`, section by section; one ConfigError names every bad value. */
export function loadConfig(env: Env = process.env): Config {
  const r = new EnvReader(env);
  const basics = parseProcess(r);
  const { managedDomain } = basics;
  const config: Config = {
    ...basics,
    ...parseHttp(r),
    ...parseApiCalls(r),
    ...parseSmtp(r, managedDomain),
    ...parseInbound(r),
    ...parseDatabase(r),
    ...parseTemporal(r),
    ...parseLimits(r),
    ...parseScanning(r),
    ...parseWebhooks(r),
    ...parseDns(r),
    ...parseCustomerDomains(r, managedDomain),
    ...parseDelivery(r),
    ...parseFeedback(r, managedDomain),
    ...parseMcpBridge(r),
    ...parseUploads(r),
  };
  if (r.errors.length > 0) throw new ConfigError(`invalid configuration:\n  ${r.errors.join("\n  ")}`);
  return Object.freeze(config);
}
