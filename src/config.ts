// The only reader of process.env: typed, validated once at start, frozen.
import { resolve } from "node:path";
import { getDomain } from "tldts";
import { parseDnsServers } from "./dns/servers.js";
import { parseAddressRanges, type AddressRange } from "./net/address-ranges.js";
import { parseSmtpRoutes, type SmtpRoute } from "./outbound/smtp-routes.js";

export interface Config {
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
  };
  /** Where ARF feedback reports (RFC 5965) are received; each believed one adds a complaint and a suppression. */
  readonly feedbackAddress: string;
  /** Feedback loops believed about any recipient (FEEDBACK_LOOP_SENDERS): authenticated domains or addresses. */
  readonly feedbackLoopSenders: readonly string[];
  readonly logLevel: "debug" | "info" | "warn" | "error";
  /** `mailbox mcp`: the service it relays MCP over stdio to (MAILBOX_URL), and the key it calls with (MAILBOX_API_KEY). */
  readonly mcpBridge: { readonly url: string; readonly apiKey: string | undefined };
}

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
  const domainName = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;
  const managedDomain = str("MANAGED_DOMAIN", "agents.localhost", domainName, "a lower-case domain name");
  const tlsCertPath = optional("SMTP_TLS_CERT");
  const tlsKeyPath = optional("SMTP_TLS_KEY");
  if ((tlsCertPath === undefined) !== (tlsKeyPath === undefined)) errors.push("SMTP_TLS_CERT and SMTP_TLS_KEY must be set together");
  /** A comma list of host names and IP addresses, trimmed and lower-cased. */
  const hostList = (name: string): string[] => {
    const hosts = (env[name] ?? "").split(",").map((h) => h.trim().toLowerCase()).filter((h) => h !== "");
    for (const host of hosts) if (!/^[a-z0-9.:-]+$/.test(host)) errors.push(`${name} must list host names or IP addresses, got "${host}"`);
    return hosts;
  };
  const allowHosts = hostList("WEBHOOK_ALLOW_HOSTS");
  const webhookRetryInitialMs = int("WEBHOOK_RETRY_INITIAL_MS", 30_000, 10, 3_600_000);
  const webhookRetryMaxMs = int("WEBHOOK_RETRY_MAX_MS", 3_600_000, 10, 86_400_000);
  if (webhookRetryMaxMs < webhookRetryInitialMs) errors.push("WEBHOOK_RETRY_MAX_MS must not be below WEBHOOK_RETRY_INITIAL_MS");
  // A duration such as 500ms, 5s, 30m, 6h or 3d.
  const duration = (name: string, fallback: string, minMs: number): number => {
    const raw = env[name] || fallback;
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(raw);
    const ms = m ? Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "ms"] : Number.NaN;
    if (!(ms >= minMs)) errors.push(`${name} must be a duration of at least ${minMs} ms such as 30s, 6h or 3d, got "${raw}"`);
    return ms;
  };
  const dnsServerList = optional("DNS_SERVERS");
  const dnsServers = dnsServerList === undefined ? undefined : parseDnsServers(dnsServerList);
  if (dnsServers && (dnsServers.invalid.length > 0 || dnsServers.servers.length === 0)) {
    errors.push(`DNS_SERVERS must list IP:port addresses, got "${dnsServerList}"`);
  }
  const smtpRouteList = parseSmtpRoutes(env.SMTP_ROUTES ?? "");
  if (smtpRouteList.invalid.length > 0) {
    errors.push(`SMTP_ROUTES must list domain=host:port entries (domain or *), got "${smtpRouteList.invalid.join(",")}"`);
  }
  const deliveryRetryInitialMs = duration("DELIVERY_RETRY_INITIAL", "1m", 10);
  const deliveryRetryMaxMs = duration("DELIVERY_RETRY_MAX", "1h", 10);
  if (deliveryRetryMaxMs < deliveryRetryInitialMs) errors.push("DELIVERY_RETRY_MAX must not be below DELIVERY_RETRY_INITIAL");
  const databaseUrl = optional("DATABASE_URL", /^postgres(ql)?:\/\//, "a postgres:// URL");
  const temporalAddress = optional("TEMPORAL_ADDRESS", /^[\w.-]+:\d+$/, "host:port");
  const temporalCert = optional("TEMPORAL_TLS_CERT");
  const temporalKey = optional("TEMPORAL_TLS_KEY");
  if ((temporalCert === undefined) !== (temporalKey === undefined)) errors.push("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY must be set together");
  const temporalCa = optional("TEMPORAL_TLS_CA");
  const temporalServerName = optional("TEMPORAL_TLS_SERVER_NAME", /^[a-zA-Z0-9.-]{1,253}$/, "a host name");
  const temporalApiKey = optional("TEMPORAL_API_KEY");
  const temporalTlsFlag = optional("TEMPORAL_TLS", /^(true|false)$/, "true or false");
  // An API key goes over TLS only (Temporal Cloud); TEMPORAL_TLS=true alone is TLS against the system's CAs.
  const temporalTls = temporalTlsFlag === "false" ? false : temporalTlsFlag === "true" || [temporalCert, temporalCa, temporalServerName, temporalApiKey].some((v) => v !== undefined);
  if (temporalTlsFlag === "false" && temporalApiKey !== undefined) errors.push("TEMPORAL_API_KEY needs TLS: unset TEMPORAL_TLS=false");
  if (temporalTls && temporalAddress === undefined) errors.push("TEMPORAL_TLS* and TEMPORAL_API_KEY need TEMPORAL_ADDRESS (the embedded Temporal is plaintext)");
  const sslMode = optional("DATABASE_SSL_MODE", /^(disable|require|verify-ca|verify-full)$/, "one of disable, require, verify-ca, verify-full");
  const sslCa = optional("DATABASE_SSL_CA");
  if ((sslMode !== undefined || sslCa !== undefined) && databaseUrl === undefined) errors.push("DATABASE_SSL_MODE and DATABASE_SSL_CA need DATABASE_URL (the embedded PostgreSQL is local)");
  // A PROXY header names any address its sender likes: it is read from the operator's load balancers only.
  const proxyProtocol = str("SMTP_PROXY_PROTOCOL", "false", /^(true|false)$/, "true or false") === "true";
  const proxyTrusted = parseAddressRanges(env.SMTP_PROXY_TRUSTED ?? "");
  if (proxyTrusted.invalid.length > 0) errors.push(`SMTP_PROXY_TRUSTED must list IP addresses or CIDR ranges such as 10.0.0.0/8, got "${proxyTrusted.invalid.join(",")}"`);
  else if (proxyProtocol !== proxyTrusted.ranges.length > 0) {
    errors.push("SMTP_PROXY_PROTOCOL=true and SMTP_PROXY_TRUSTED (the load balancers' addresses or ranges, which alone may send the header) go together");
  }
  const apiHeadersTimeoutMs = int("API_HEADERS_TIMEOUT_MS", 10_000, 100, 600_000);
  const apiRequestTimeoutMs = int("API_REQUEST_TIMEOUT_MS", 120_000, 100, 3_600_000);
  if (apiRequestTimeoutMs < apiHeadersTimeoutMs) errors.push("API_REQUEST_TIMEOUT_MS must not be below API_HEADERS_TIMEOUT_MS");
  const config: Config = {
    httpPort: int("HTTP_PORT", 8080, 0, 65535),
    bindHost: str("BIND_HOST", "127.0.0.1"),
    statusPort: env.STATUS_PORT === undefined || env.STATUS_PORT === "" ? undefined : int("STATUS_PORT", 0, 0, 65535),
    metricsToken: (() => {
      const token = optional("METRICS_TOKEN");
      // Not echoed: the value is a secret.
      if (token !== undefined && !/^[\x21-\x7e]{16,}$/.test(token)) errors.push("METRICS_TOKEN must be at least 16 printable characters without spaces");
      return token;
    })(),
    api: {
      maxConnections: int("API_MAX_CONNECTIONS", 1000, 1, 1_000_000),
      maxConnectionsPerPeer: int("API_MAX_CONNECTIONS_PER_PEER", 100, 1, 1_000_000),
      maxHeaderBytes: int("API_MAX_HEADER_BYTES", 16 * 1024, 1024, 1024 * 1024),
      headersTimeoutMs: apiHeadersTimeoutMs,
      requestTimeoutMs: apiRequestTimeoutMs,
      maxRequestBytes: int("API_MAX_REQUEST_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
      h2MaxStreams: int("API_H2_MAX_STREAMS", 100, 1, 10_000),
      h2SessionMemoryMb: int("API_H2_SESSION_MEMORY_MB", 10, 1, 1024),
      authFailuresPerMinute: int("API_AUTH_FAILURES_PER_MINUTE", 100, 1, 1_000_000),
    },
    smtpPort: int("SMTP_PORT", 2525, 0, 65535),
    smtp: {
      hostname: str("SMTP_HOSTNAME", managedDomain, domainName, "a lower-case host name"),
      tlsCertPath: tlsCertPath && resolve(tlsCertPath),
      tlsKeyPath: tlsKeyPath && resolve(tlsKeyPath),
      maxConnections: int("SMTP_MAX_CONNECTIONS", 100, 1, 100_000),
      maxRecipients: int("SMTP_MAX_RECIPIENTS", 100, 1, 10_000),
      idleTimeoutMs: int("SMTP_IDLE_TIMEOUT_MS", 60_000, 1000, 3_600_000),
      sessionTimeoutMs: int("SMTP_SESSION_TIMEOUT_MS", 600_000, 1000, 86_400_000),
      maxHeaderBytes: int("SMTP_MAX_HEADER_BYTES", 256 * 1024, 1024, 16 * 1024 * 1024),
      maxMimeDepth: int("SMTP_MAX_MIME_DEPTH", 20, 1, 1000),
      // At most 1000: attachment ids number a message's attachments 1..999 (spec id shape).
      maxMimeParts: int("SMTP_MAX_MIME_PARTS", 500, 1, 1000),
      maxConnectionsPerClient: int("SMTP_MAX_CONNECTIONS_PER_CLIENT", 20, 1, 100_000),
      maxRefusedRecipients: int("SMTP_MAX_REFUSED_RECIPIENTS", 20, 1, 10_000),
      refusalDelayAfter: int("SMTP_REFUSAL_DELAY_AFTER", 10, 0, 10_000),
      refusalDelayMs: int("SMTP_REFUSAL_DELAY_MS", 1000, 0, 60_000),
      receiveMemoryBytes: int("SMTP_RECEIVE_MEMORY_BYTES", 32 * 1024 * 1024, 1024 * 1024, 64 * 1024 * 1024 * 1024),
      proxyTrusted: proxyProtocol ? proxyTrusted.ranges : undefined,
    },
    inbound: {
      parseTimeoutMs: int("INBOUND_PARSE_TIMEOUT_MS", 15_000, 10, 600_000),
      parseMemoryMb: int("INBOUND_PARSE_MEMORY_MB", 256, 16, 16_384),
      concurrency: int("INBOUND_CONCURRENCY", 2, 1, 64),
      processingMemoryBytes: int("INBOUND_PROCESSING_MEMORY_BYTES", 64 * 1024 * 1024, 1024 * 1024, 64 * 1024 * 1024 * 1024),
      maxBacklogMessages: int("INBOUND_MAX_BACKLOG", 50_000, 1, 10_000_000),
      maxBacklogBytes: int("INBOUND_MAX_BACKLOG_BYTES", 1024 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024 * 1024),
    },
    databaseUrl,
    temporalAddress,
    temporalNamespace: str("TEMPORAL_NAMESPACE", "default", /^[\w.-]{1,64}$/, "a namespace name"),
    temporalTaskQueue: str("TEMPORAL_TASK_QUEUE", "mailbox", /^[\w.-]{1,64}$/, "a task queue name"),
    temporalAccess: {
      tls: temporalTls
        ? {
            certPath: temporalCert && resolve(temporalCert),
            keyPath: temporalKey && resolve(temporalKey),
            caPath: temporalCa && resolve(temporalCa),
            serverName: temporalServerName,
          }
        : undefined,
      apiKey: temporalApiKey,
    },
    database: {
      sslMode: sslMode as DatabaseSslMode | undefined,
      sslCaPath: sslCa && resolve(sslCa),
      poolMax: int("DATABASE_POOL_MAX", 20, 1, 1000),
    },
    shutdownTimeoutMs: int("SHUTDOWN_TIMEOUT_MS", 30_000, 1000, 3_600_000),
    temporalUiPort: int("TEMPORAL_UI_PORT", 8233, 0, 65535),
    managedDomain,
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
    waits: {
      perKey: int("WAIT_MAX_PER_KEY", 10, 1, 10_000),
      perProcess: int("WAIT_MAX_PER_PROCESS", 500, 1, 1_000_000),
    },
    streams: {
      perKey: int("STREAM_MAX_PER_KEY", 5, 1, 10_000),
      perProcess: int("STREAM_MAX_PER_PROCESS", 500, 1, 1_000_000),
      keepAliveMs: int("STREAM_KEEPALIVE_S", 15, 1, 300) * 1000,
    },
    eventRetentionMs: duration("EVENT_RETENTION", "72h", 60_000),
    purgeBatchSize: int("PURGE_BATCH_SIZE", 500, 1, 100_000),
    scanning: {
      clamdAddress: optional("CLAMD_ADDRESS", /^(unix:\/.+|[\w.-]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5})$/, "host:port or unix:/path"),
      timeoutMs: int("SCAN_TIMEOUT_MS", 60_000, 100, 600_000),
      maxBytes: int("SCAN_MAX_BYTES", 25 * 1024 * 1024, 1024, 512 * 1024 * 1024),
    },
    webhooks: {
      allowHosts,
      timeoutMs: int("WEBHOOK_TIMEOUT_MS", 10_000, 100, 60_000),
      maxAttempts: int("WEBHOOK_MAX_ATTEMPTS", 10, 1, 50),
      retryInitialMs: webhookRetryInitialMs,
      retryMaxMs: webhookRetryMaxMs,
      secretReplayMs: int("WEBHOOK_SECRET_REPLAY_S", 86_400, 0, 30 * 86_400) * 1000,
    },
    dnsServers: dnsServers?.servers,
    dnsTimeoutMs: int("DNS_TIMEOUT_MS", 2000, 10, 30_000),
    customerDomains: {
      inboundMxHost: str("INBOUND_MX_HOST", `mx.${managedDomain}`, domainName, "a lower-case host name"),
      spfInclude: str("SPF_INCLUDE", `_spf.${managedDomain}`, /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/, "a lower-case domain name"),
      refreshMs: duration("DOMAIN_VERIFY_REFRESH", "6h", 1000),
      graceMs: duration("DOMAIN_VERIFY_GRACE", "72h", 0),
      dkimKeySecret: optional("DKIM_KEY_SECRET", /^.{32,}$/, "at least 32 characters"),
    },
    delivery: {
      routes: smtpRouteList.routes,
      allowHosts: hostList("DELIVERY_ALLOW_HOSTS"),
      retryInitialMs: deliveryRetryInitialMs,
      retryMaxMs: deliveryRetryMaxMs,
      queueLifetimeMs: duration("DELIVERY_QUEUE_LIFETIME", "5d", 1000),
      timeoutMs: int("DELIVERY_TIMEOUT_MS", 30_000, 100, 600_000),
      managedDkimSelector: str("MANAGED_DKIM_SELECTOR", "mbx1", /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, "a DNS label"),
      managedDkimKeyPath: (() => {
        const path = optional("MANAGED_DKIM_KEY");
        return path && resolve(path);
      })(),
      connectionIdleMs: int("DELIVERY_CONNECTION_IDLE_MS", 5_000, 100, 300_000),
      concurrency: int("DELIVERY_CONCURRENCY", 32, 1, 10_000),
      backlogMaxMs: int("DELIVERY_BACKLOG_MAX_S", 10, 2, 86_400) * 1000,
    },
    feedbackAddress: str("FEEDBACK_ADDRESS", `feedback@${managedDomain}`, /^[a-z0-9._+-]+@[a-z0-9.-]+$/, "a lower-case address"),
    feedbackLoopSenders: (env.FEEDBACK_LOOP_SENDERS || DEFAULT_FEEDBACK_LOOP_SENDERS).split(",").map((s) => s.trim().toLowerCase()).filter((entry) => {
      if (entry === "") return false;
      // A domain or one address; not a public suffix (com, co.uk), which would trust everyone below it.
      const domain = entry.slice(entry.lastIndexOf("@") + 1);
      const ok = /^([a-z0-9._+-]+@)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(entry) && getDomain(domain, { allowPrivateDomains: true }) !== null;
      if (!ok) errors.push(`FEEDBACK_LOOP_SENDERS must list domains or addresses, got "${entry}"`);
      return ok;
    }),
    logLevel: logLevels.find((l) => l === logLevel) ?? "info",
    mcpBridge: {
      url: str("MAILBOX_URL", `http://127.0.0.1:${env.HTTP_PORT || 8080}`, /^https?:\/\/[^/?#]+\/?$/, "an http(s) URL of the service (scheme and host)"),
      apiKey: optional("MAILBOX_API_KEY"),
    },
  };
  if (errors.length > 0) throw new ConfigError(`invalid configuration:\n  ${errors.join("\n  ")}`);
  return Object.freeze(config);
}
