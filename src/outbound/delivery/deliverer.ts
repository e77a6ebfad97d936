// The work behind the delivery activities: queue a submission, make one attempt to one recipient domain (route,
// connect, send, record each recipient's outcome), and fail what the queue lifetime leaves open; and the first
// attempt of a submission the delivery queue claimed, which the queue makes itself with what its claim read.
// Idempotent by construction: an attempt sends only to the domain's open recipients, so recipients recorded as
// delivered are never sent again. A worker killed after the peer's 250 and before the record may cause one more copy
// (the same bytes, the same Message-ID) on the retried attempt; a message is never lost.
import { createInFlight, type InFlight } from "../../runtime/drain.js";
import type { Config } from "../../config.js";
import type { Database, SqlPool } from "../../db/database.js";
import type { DnsResolver } from "../../dns/resolver.js";
import type { DkimSigningKey } from "../../domains/signing-keys.js";
import type { Logger } from "../../logger.js";
import type { OutboundMetrics } from "../../metrics/metrics.js";
import type { AddressPolicy } from "../../net/address-policy.js";
import { classifyTransportFailure, type DeliveryVerdict } from "../classify-smtp-result.js";
import type { SmtpRoute } from "../smtp-routes.js";
import { connectHostOf, nextHops } from "./next-hop.js";
import type { DeliveryOperations, DomainAttemptResult, RecipientAttemptOutcome } from "./operations.js";
import { attemptSmtp, createSmtpConnections, type SmtpConnections } from "./smtp-attempt.js";
import {
  failOpenRecipients,
  queueSubmission,
  readAttemptInput,
  readMime,
  recordOutcomes,
  type AttemptInput,
  type BouncedRecipient,
  type ClaimedSubmission,
  type RecipientOutcome,
} from "./store.js";

/** How often a running attempt tells Temporal it is alive (well within the workflow's heartbeat timeout). */
const HEARTBEAT_INTERVAL_MS = 2_000;
/** No next host is tried after this long, so an attempt ends well within its activity timeout (30 min). */
const ATTEMPT_BUDGET_MS = 15 * 60_000;
/**
 * A first attempt (a local activity, inside the workflow task) ends after this long wherever it is, its recipients
 * deferred, so it never outlives its activity timeout and runs twice at once; retries are regular activities.
 */
export const FIRST_ATTEMPT_BUDGET_MS = 60_000;
/**
 * Waits before a failed recording (the database) is tried again; then the attempt fails. Recording what the peer
 * answered is worth waiting for: a failed attempt is made again, and would send a copy the peer already took.
 */
const RECORD_RETRY_MS = [250, 1_000, 2_000, 4_000] as const;

export const QUEUE_LIFETIME_EXCEEDED = "queue_lifetime_exceeded";

export interface DeliverySettings {
  readonly routes: readonly SmtpRoute[];
  readonly managedDomain: string;
  /** Our own inbound SMTP, where managed-domain mail goes when no route names it. */
  readonly localSmtp: { readonly host: string; readonly port: number };
  /** The port of MX hosts: 25 (tests point it at their sink). */
  readonly mxPort: number;
  /** MX hosts exempt from the public-address check (DELIVERY_ALLOW_HOSTS: development and tests only). */
  readonly addressPolicy: AddressPolicy;
  /** Our EHLO name. */
  readonly ehloName: string;
  readonly timeoutMs: number;
  readonly connectionIdleMs: number;
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  readonly queueLifetimeMs: number;
}

export interface DeliveryDeps {
  readonly db: Database;
  readonly settings: DeliverySettings;
  readonly resolver: DnsResolver;
  /** The managed domain's signing key (loadManagedDkimKey), asked for when managed-domain mail is sent. */
  readonly managedDkimKey: () => Promise<DkimSigningKey>;
  /** Customer domains' signing keys (createDkimSigningKeys). */
  readonly customerDkimKeys: { dkimKeyFor(organizationId: string, domain: string): Promise<DkimSigningKey | undefined> };
  readonly log?: Logger;
  /** Kept connections per next hop; one set per process (made here when omitted; idle ones close by themselves). */
  readonly connections?: SmtpConnections;
  /** Attempts under way, which the worker's drain lets finish (made here when omitted). */
  readonly attempts?: InFlight;
  /** Told when a first attempt of a submission has ended in this process (the delivery queue's capacity). */
  readonly firstAttemptEnded?: (submissionId: string) => void;
  /** Recipient outcomes and accepted→delivered latency are recorded here. */
  readonly metrics?: OutboundMetrics;
}

/** The delivery settings of a configuration; `mxPort` is 25 outside tests. */
export function deliverySettingsOf(
  config: Pick<Config, "managedDomain" | "bindHost" | "smtpPort" | "smtp" | "delivery">,
  mxPort = 25,
): DeliverySettings {
  return {
    routes: config.delivery.routes,
    managedDomain: config.managedDomain,
    localSmtp: { host: connectHostOf(config.bindHost), port: config.smtpPort },
    mxPort,
    addressPolicy: { allowHosts: config.delivery.allowHosts },
    ehloName: config.smtp.hostname,
    timeoutMs: config.delivery.timeoutMs,
    connectionIdleMs: config.delivery.connectionIdleMs,
    retryInitialMs: config.delivery.retryInitialMs,
    retryMaxMs: config.delivery.retryMaxMs,
    queueLifetimeMs: config.delivery.queueLifetimeMs,
  };
}

/** The delivery activities' operations, and the delivery queue's own first attempts. */
export interface Deliverer extends DeliveryOperations {
  /**
   * The first attempt to one domain of a submission the delivery queue claimed, made in this process with what the
   * claim read: bounded to FIRST_ATTEMPT_BUDGET_MS, and waited for by the worker's drain like every attempt.
   */
  firstAttempt(claimed: ClaimedSubmission, domain: string): Promise<DomainAttemptResult>;
}

export function createDeliveryOperations(deps: DeliveryDeps): Deliverer {
  const { sql } = deps.db;
  const attempts = deps.attempts ?? createInFlight();
  const { settings } = deps;
  const connections =
    deps.connections ?? createSmtpConnections({ ehloName: settings.ehloName, timeoutMs: settings.timeoutMs, idleMs: settings.connectionIdleMs });
  const attempter: Attempter = { ...deps, connections };

  return {
    async queueSubmission(submissionId) {
      const queued = await queueSubmission(sql, submissionId);
      return {
        domains: queued.domains,
        createdAtMs: queued.createdAt.getTime(),
        retryInitialMs: settings.retryInitialMs,
        retryMaxMs: settings.retryMaxMs,
        queueLifetimeMs: settings.queueLifetimeMs,
      };
    },

    async attemptDomain(submissionId, domain, { heartbeat, signal, first }) {
      try {
        return await attempts.run(async (cut) => {
          const input = await readAttemptInput(sql, submissionId, domain);
          if (!input) return { remaining: 0 };
          return attemptWith(attempter, input, domain, heartbeat, AbortSignal.any([signal, cut, ...(first ? [AbortSignal.timeout(FIRST_ATTEMPT_BUDGET_MS)] : [])]));
        });
      } finally {
        if (first) deps.firstAttemptEnded?.(submissionId);
      }
    },

    firstAttempt(claimed, domain) {
      return attempts.run(async (cut) => {
        const input = await claimedInput(sql, claimed, domain);
        if (!input) return { remaining: 0 };
        return attemptWith(attempter, input, domain, () => undefined, AbortSignal.any([cut, AbortSignal.timeout(FIRST_ATTEMPT_BUDGET_MS)]));
      });
    },

    async expireDomain(submissionId, domain) {
      await failOpenRecipients(sql, submissionId, domain, QUEUE_LIFETIME_EXCEEDED, "queue lifetime exceeded");
    },
  };
}

/** What one attempt uses: the deliverer's dependencies with the process's kept connections. */
type Attempter = DeliveryDeps & { readonly connections: SmtpConnections };

/** One attempt to one domain with its input: route, connect, send, record each recipient's outcome. */
async function attemptWith(deps: Attempter, input: AttemptInput, domain: string, heartbeat: () => void, signal: AbortSignal): Promise<DomainAttemptResult> {
  if (input.recipients.length === 0) return { remaining: 0 };
  const { settings } = deps;
  const timer = setInterval(heartbeat, HEARTBEAT_INTERVAL_MS);
  try {
    let verdicts: ReadonlyMap<string, DeliveryVerdict>;
    let fromSmtp = true;
    const hops = await nextHops(domain, { ...settings, resolver: deps.resolver });
    if (hops.kind === "failure") {
      const verdict = classifyTransportFailure(hops.failure);
      verdicts = new Map(input.recipients.map((r) => [r.email, verdict]));
      fromSmtp = false;
    } else {
      const result = await attemptSmtp(
        {
          hops: hops.hops,
          ehloName: settings.ehloName,
          timeoutMs: settings.timeoutMs,
          from: input.fromEmail,
          recipients: input.recipients.map((r) => r.email),
          mime: input.mime,
          dkim: await signingKeyFor(deps, input.organizationId, input.fromEmail),
          deadline: Date.now() + ATTEMPT_BUDGET_MS,
          signal,
        },
        deps.connections,
      );
      verdicts = result.verdicts;
    }
    const outcomes: RecipientOutcome[] = [];
    const suppress: BouncedRecipient[] = [];
    for (const r of input.recipients) {
      const verdict = verdicts.get(r.email) ?? classifyTransportFailure({ message: "no verdict for this recipient" });
      const outcome = outcomeOf(verdict, fromSmtp);
      outcomes.push({ id: r.id, ...outcome });
      if (outcome.status === "bounced") suppress.push({ id: r.id, email: r.email, detail: verdict.response });
    }
    await recordWithRetries(deps, input.submissionId, outcomes, suppress);
    const recordedAt = Date.now();
    for (const o of outcomes) deps.metrics?.recipient(o.status, (recordedAt - input.acceptedAt.getTime()) / 1000);
    deps.log?.debug("delivery attempt", { submissionId: input.submissionId, domain, outcomes: outcomes.map((o) => o.status) });
    return {
      remaining: outcomes.filter((o) => o.status === "deferred").length,
      recipients: input.recipients.map((r, i) => attemptOutcomeOf(r.email, outcomes[i]!)),
    };
  } finally {
    // Heartbeats go on while the outcome is recorded: a retried recording must not pass for a lost worker.
    clearInterval(timer);
  }
}

/** The signing key of the sender's domain: the managed domain's, or the customer domain's (unsigned without one). */
async function signingKeyFor(deps: DeliveryDeps, organizationId: string, fromEmail: string): Promise<DkimSigningKey | undefined> {
  const domain = fromEmail.slice(fromEmail.lastIndexOf("@") + 1).toLowerCase();
  if (domain === deps.settings.managedDomain) return deps.managedDkimKey();
  const key = await deps.customerDkimKeys.dkimKeyFor(organizationId, domain);
  // Acceptance checked that the domain may send; a domain removed since then is sent unsigned rather than held.
  if (!key) deps.log?.warn("no DKIM key for the sender domain, sending unsigned", { organizationId, domain });
  return key;
}

/** Records an attempt's outcomes, trying again (RECORD_RETRY_MS) while the database fails. */
async function recordWithRetries(deps: DeliveryDeps, submissionId: string, outcomes: readonly RecipientOutcome[], suppress: readonly BouncedRecipient[]): Promise<void> {
  for (let retry = 0; ; retry++) {
    try {
      return await recordOutcomes(deps.db.sql, submissionId, outcomes, suppress);
    } catch (e) {
      const wait = RECORD_RETRY_MS[retry];
      if (wait === undefined) throw e;
      deps.log?.warn("delivery outcome not recorded, trying again", { submissionId, error: e });
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** The attempt's input from what the delivery queue's claim read; undefined when the submission is gone. */
async function claimedInput(sql: SqlPool, claimed: ClaimedSubmission, domain: string): Promise<AttemptInput | undefined> {
  const mime = claimed.mime ?? (await readMime(sql, claimed.submissionId));
  if (!mime) return undefined;
  return {
    submissionId: claimed.submissionId,
    organizationId: claimed.organizationId,
    fromEmail: claimed.fromEmail,
    acceptedAt: claimed.createdAt,
    mime,
    recipients: claimed.recipients.filter((r) => r.domain === domain).map((r) => ({ id: r.id, email: r.email })),
  };
}

/** A recipient's outcome as the attempt's result names it: the reply code read from the reply's start, when a server gave one. */
function attemptOutcomeOf(email: string, outcome: RecipientOutcome): RecipientAttemptOutcome {
  const code = /^([2-5]\d\d)[ -]/.exec(outcome.response);
  return { email, status: outcome.status, replyCode: code ? Number(code[1]) : null, reply: outcome.response };
}

/**
 * A verdict as a recipient state. Only an SMTP server's hard bounce makes `bounced` (and a suppression); a domain
 * that DNS says cannot receive mail (null MX, NXDOMAIN) fails without suppressing the address, since DNS can be
 * wrong for a while and a suppression outlives it.
 */
export function outcomeOf(verdict: DeliveryVerdict, fromSmtp: boolean): Omit<RecipientOutcome, "id"> {
  switch (verdict.kind) {
    case "delivered":
      return { status: "delivered", response: verdict.response, failureCode: null };
    case "deferred":
      return { status: "deferred", response: verdict.response, failureCode: verdict.failureCode };
    case "rejected":
      return { status: verdict.hardBounce && fromSmtp ? "bounced" : "failed", response: verdict.response, failureCode: verdict.failureCode };
  }
}
