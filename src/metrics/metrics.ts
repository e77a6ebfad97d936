// The Prometheus metrics of one process (prom-client), in a registry of its own: the composition root makes one and
// hands it to the roles, which record through the small interfaces below. Labels name operations, faces, outcomes
// and reply codes only: never an organization, inbox, address or key.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** The API faces a request arrives on. */
export type ApiFace = "connect" | "grpc" | "grpc-web" | "json" | "mcp";

export interface ApiMetrics {
  /** One answered call: its RPC method, face, Connect code (snake_case, "ok" for success) and duration. */
  observe(operation: string, face: ApiFace, code: string, seconds: number): void;
}

export interface SmtpMetrics {
  sessionOpened(): void;
  sessionClosed(): void;
  /** A command refused: `command` is mail, rcpt or data; `code` and `status` the reply's (e.g. 550, 5.1.1). */
  refused(command: string, code: number, status: string): void;
  /** A message committed and answered 250, with its size. */
  accepted(bytes: number): void;
}

export type WebhookAttemptOutcome = "delivered" | "retry" | "failed";

export interface WebhookMetrics {
  /** A webhook request sent and its outcome recorded. */
  attempted(outcome: WebhookAttemptOutcome, count?: number): void;
}

export interface OutboundMetrics {
  /** One recipient's outcome of one delivery attempt; a delivered one with its time since the send was accepted. */
  recipient(outcome: "delivered" | "deferred" | "bounced" | "failed", acceptedToDeliveredSeconds?: number): void;
}

export interface Metrics {
  readonly registry: Registry;
  readonly api: ApiMetrics;
  readonly smtp: SmtpMetrics;
  readonly webhooks: WebhookMetrics;
  readonly delivery: OutboundMetrics;
  /**
   * A gauge read when scraped: `read` returns its samples. A read that fails leaves the gauge without samples for
   * that scrape. Registering a name again replaces its read (one source per name and process); the function
   * returned removes the read (the gauge then has no samples).
   */
  gauge(name: string, help: string, labelNames: readonly string[], read: SampleRead): () => void;
  /** Text appended to every scrape (the Temporal SDK's own exporter); a source that fails adds nothing. */
  appendScrape(source: () => Promise<string>): void;
  /** The exposition text of every metric. */
  scrape(): Promise<string>;
}

export type SampleRead = () => Promise<readonly Sample[]> | readonly Sample[];

export interface Sample {
  readonly labels?: Record<string, string>;
  readonly value: number;
}

/** Latency buckets of API calls, in seconds: 1 ms to 30 s. */
const API_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Accepted→delivered buckets, in seconds: 50 ms (a local next hop) to 5 days (the queue lifetime). */
const DELIVERY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 5 * 86_400];
/** Accepted message sizes in bytes: 1 KiB to 64 MiB. */
const SIZE_BUCKETS = [1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864];

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const apiRequests = new Counter({
    name: "mailbox_api_requests_total",
    help: "API calls answered, by RPC method, face and Connect code.",
    labelNames: ["operation", "face", "code"],
    registers,
  });
  const apiDuration = new Histogram({
    name: "mailbox_api_request_duration_seconds",
    help: "Time to answer an API call, by RPC method, face and Connect code.",
    labelNames: ["operation", "face", "code"],
    buckets: API_BUCKETS,
    registers,
  });

  const smtpSessions = new Counter({ name: "mailbox_smtp_sessions_total", help: "SMTP connections accepted.", registers });
  const smtpOpen = new Gauge({ name: "mailbox_smtp_sessions_open", help: "SMTP connections open now.", registers });
  const smtpAccepted = new Counter({ name: "mailbox_smtp_messages_accepted_total", help: "Messages committed and answered 250.", registers });
  const smtpBytes = new Counter({ name: "mailbox_smtp_accepted_bytes_total", help: "Bytes of the messages answered 250.", registers });
  const smtpSize = new Histogram({ name: "mailbox_smtp_message_size_bytes", help: "Sizes of the messages answered 250.", buckets: SIZE_BUCKETS, registers });
  const smtpRefused = new Counter({
    name: "mailbox_smtp_refusals_total",
    help: "SMTP commands refused, by command (mail, rcpt, data), reply code and enhanced status.",
    labelNames: ["command", "code", "status"],
    registers,
  });

  const webhookAttempts = new Counter({
    name: "mailbox_webhook_attempts_total",
    help: "Webhook requests sent, by outcome: delivered, retry (failed, retried later) or failed (no attempt left).",
    labelNames: ["outcome"],
    registers,
  });

  const deliveryRecipients = new Counter({
    name: "mailbox_delivery_recipients_total",
    help: "Recipient outcomes of outbound delivery attempts: delivered, deferred, bounced or failed.",
    labelNames: ["outcome"],
    registers,
  });
  const deliveryLatency = new Histogram({
    name: "mailbox_delivery_latency_seconds",
    help: "Time from a send's acceptance (202) to the recipient server's acceptance, per delivered recipient.",
    buckets: DELIVERY_BUCKETS,
    registers,
  });

  const appended: (() => Promise<string>)[] = [];
  const reads = new Map<string, SampleRead>();

  return {
    registry,
    api: {
      observe(operation, face, code, seconds) {
        apiRequests.inc({ operation, face, code });
        apiDuration.observe({ operation, face, code }, seconds);
      },
    },
    smtp: {
      sessionOpened() {
        smtpSessions.inc();
        smtpOpen.inc();
      },
      sessionClosed: () => smtpOpen.dec(),
      refused: (command, code, status) => smtpRefused.inc({ command, code: String(code), status }),
      accepted(bytes) {
        smtpAccepted.inc();
        smtpBytes.inc(bytes);
        smtpSize.observe(bytes);
      },
    },
    webhooks: { attempted: (outcome, count = 1) => webhookAttempts.inc({ outcome }, count) },
    delivery: {
      recipient(outcome, seconds) {
        deliveryRecipients.inc({ outcome });
        if (outcome === "delivered" && seconds !== undefined) deliveryLatency.observe(Math.max(0, seconds));
      },
    },
    gauge(name, help, labelNames, read) {
      if (!registry.getSingleMetric(name)) {
        new Gauge({
          name,
          help,
          labelNames: [...labelNames],
          registers,
          async collect() {
            this.reset();
            const current = reads.get(name);
            let samples: readonly Sample[];
            try {
              samples = current ? await current() : [];
            } catch {
              return;
            }
            for (const s of samples) {
              if (s.labels) this.set(s.labels, s.value);
              else this.set(s.value);
            }
          },
        });
      }
      reads.set(name, read);
      return () => {
        if (reads.get(name) === read) reads.delete(name);
      };
    },
    appendScrape: (source) => void appended.push(source),
    async scrape() {
      const own = await registry.metrics();
      const more = await Promise.all(appended.map((source) => source().catch(() => "")));
      return [own, ...more].filter((text) => text !== "").join("\n");
    },
  };
}

/** `work`, run once at a time: callers that come while it runs share its answer. */
export function singleFlight<T>(work: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () => (running ??= work().finally(() => (running = undefined)));
}
