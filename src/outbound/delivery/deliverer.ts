// The work behind the delivery activities: queue a submission, make one attempt to one recipient domain (route,
// connect, send, record each recipient's outcome), and fail what the queue lifetime leaves open. Idempotent by
// construction: an attempt reads the domain's open recipients when it starts, so recipients recorded as delivered
// are never sent again. A worker killed after the peer's 250 and before the record may cause one more copy (the
// same bytes, the same Message-ID) on the retried attempt; a message is never lost.
import { createInFlight, type InFlight } from "../../runtime/drain.js";
import type { Config } from "../../config.js";
import type { Database } from "../../db/database.js";
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
import { failOpenRecipients, queueSubmission, readAttemptInput, recordOutcomes, type BouncedRecipient, type RecipientOutcome } from "./store.js";

/** How often a running attempt tells Temporal it is alive (well within the workflow's heartbeat timeout). */
const HEARTBEAT_INTERVAL_MS = 2_000;
/** No next host is tried after this long, so an attempt ends well within its activity timeout (30 min). */
const ATTEMPT_BUDGET_MS = 15 * 60_000;
/**
 * A first attempt (a local activity, inside the workflow task) ends after this long wherever it is, its recipients
 * deferred, so it never outlives its activity timeout and runs twice at once; retries are regular activities.
 */
export const FIRST_ATTEMPT_BUDGET_MS = 60_000;

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

export function createDeliveryOperations(deps: DeliveryDeps): DeliveryOperations {
  const { sql } = deps.db;
  const attempts = deps.attempts ?? createInFlight();
  const { settings } = deps;
  const connections =
    deps.connections ?? createSmtpConnections({ ehloName: settings.ehloName, timeoutMs: settings.timeoutMs, idleMs: settings.connectionIdleMs });

  const signingKey = async (organizationId: string, fromEmail: string): Promise<DkimSigningKey | undefined> => {
    const domain = fromEmail.slice(fromEmail.lastIndexOf("@") + 1).toLowerCase();
    if (domain === settings.managedDomain) return deps.managedDkimKey();
    const key = await deps.customerDkimKeys.dkimKeyFor(organizationId, domain);
    // Acceptance checked that the domain may send; a domain removed since then is sent unsigned rather than held.
    if (!key) deps.log?.warn("no DKIM key for the sender domain, sending unsigned", { organizationId, domain });
    return key;
  };

  /** One attempt to one domain: route, connect, send, record each recipient's outcome. */
  async function attempt(submissionId: string, domain: string, heartbeat: () => void, signal: AbortSignal): Promise<DomainAttemptResult> {
    const input = await readAttemptInput(sql, submissionId, domain);
    if (!input || input.recipients.length === 0) return { remaining: 0 };
    const timer = setInterval(heartbeat, HEARTBEAT_INTERVAL_MS);
    let verdicts: ReadonlyMap<string, DeliveryVerdict>;
    let fromSmtp = true;
    try {
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
            dkim: await signingKey(input.organizationId, input.fromEmail),
            deadline: Date.now() + ATTEMPT_BUDGET_MS,
            signal,
          },
          connections,
        );
        verdicts = result.verdicts;
      }
    } finally {
      clearInterval(timer);
    }
    const outcomes: RecipientOutcome[] = [];
    const suppress: BouncedRecipient[] = [];
    for (const r of input.recipients) {
      const verdict = verdicts.get(r.email) ?? classifyTransportFailure({ message: "no verdict for this recipient" });
      const outcome = outcomeOf(verdict, fromSmtp);
      outcomes.push({ id: r.id, ...outcome });
      if (outcome.status === "bounced") suppress.push({ id: r.id, email: r.email, detail: verdict.response });
    }
    await recordOutcomes(sql, submissionId, outcomes, suppress);
    const recordedAt = Date.now();
    for (const o of outcomes) deps.metrics?.recipient(o.status, (recordedAt - input.acceptedAt.getTime()) / 1000);
    deps.log?.debug("delivery attempt", { submissionId, domain, outcomes: outcomes.map((o) => o.status) });
    return { remaining: outcomes.filter((o) => o.status === "deferred").length, recipients: input.recipients.map((r, i) => attemptOutcomeOf(r.email, outcomes[i]!)) };
  }

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
        return await attempts.run((cut) =>
          attempt(submissionId, domain, heartbeat, AbortSignal.any([signal, cut, ...(first ? [AbortSignal.timeout(FIRST_ATTEMPT_BUDGET_MS)] : [])])),
        );
      } finally {
        if (first) deps.firstAttemptEnded?.(submissionId);
      }
    },

    async expireDomain(submissionId, domain) {
      await failOpenRecipients(sql, submissionId, domain, QUEUE_LIFETIME_EXCEEDED, "queue lifetime exceeded");
    },
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
