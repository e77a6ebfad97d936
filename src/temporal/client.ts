// Temporal client helpers: connecting, registering our search attributes, and business-key workflow starts — the
// Temporal side of the domains' starter ports (InboxPurgeStarter, DeliveryStarter, AttachmentScanStarter, …),
// built by the composition and passed in.
import { Client, Connection } from "@temporalio/client";
import { defineSearchAttributeKey, SearchAttributeType, WorkflowExecutionAlreadyStartedError } from "@temporalio/common";
import type { attachmentScan } from "../../workflows/attachment-scan.js";
import type { delivery } from "../../workflows/delivery.js";
import type { domainVerification } from "../../workflows/domain-verification.js";
import type { inboxPurge } from "../../workflows/inbox-purge.js";
import type { webhookDelivery } from "../../workflows/webhook-delivery.js";
import type { DomainVerificationStarter } from "../domains/domains.js";
import type { AttachmentScanStarter } from "../inbound/ports.js";
import type { InboxPurgeStarter } from "../inboxes/inboxes.js";
import type { DeliveryStarter } from "../outbound/delivery/queue.js";
import type { HoldDecisionNotifier } from "../outbound/ports.js";
import type { WebhookRetryStarter, WebhookSettings } from "../webhooks/deliveries.js";
import { connectDiagnosed, PLAINTEXT, temporalConnectOptions, type TemporalAccess } from "./access.js";
import { MAILBOX_SEARCH_ATTRIBUTES, registerSearchAttributes, SEARCH_ATTRIBUTE } from "./search-attributes.js";

export const organizationKey = defineSearchAttributeKey(SEARCH_ATTRIBUTE.organizationId, SearchAttributeType.KEYWORD);
export const inboxKey = defineSearchAttributeKey(SEARCH_ATTRIBUTE.inboxId, SearchAttributeType.KEYWORD);

/**
 * The longest a workflow start may take. A Temporal that refuses connections fails a start once the client's
 * retries run out (~20 s); one that takes connections and never answers would hold it forever. Every start below
 * is made good by a reconciler, so its caller gives up after this and goes on.
 */
export const START_DEADLINE_MS = 5_000;

/** Runs a workflow start under START_DEADLINE_MS. */
export function withStartDeadline<R>(client: Client, start: () => Promise<R>): Promise<R> {
  return client.withDeadline(Date.now() + START_DEADLINE_MS, start);
}

/** A client of `namespace` at `address`, over TLS and with the API key of `access` when configured. */
export async function connectTemporal(address: string, namespace: string, access: TemporalAccess = PLAINTEXT): Promise<Client> {
  const connection = await connectDiagnosed(await temporalConnectOptions(address, access), (options) => Connection.connect(options));
  return new Client({ connection, namespace });
}

/** Registers our search attributes on a cluster that lacks them (idempotent). */
export function ensureSearchAttributes(client: Client): Promise<void> {
  return registerSearchAttributes(client.connection, client.options.namespace, MAILBOX_SEARCH_ATTRIBUTES);
}

/** The business key of an inbox purge: one per inbox, findable in the UI as inbox-purge/<inboxId>. */
export function inboxPurgeWorkflowId(inboxId: string): string {
  return `inbox-purge/${inboxId}`;
}

export function createInboxPurgeStarter(client: Client, taskQueue: string, batchSize: number): InboxPurgeStarter {
  return {
    async start({ id, organizationId }) {
      await withStartDeadline(client, () =>
        client.workflow.start<typeof inboxPurge>("inboxPurge", {
          workflowId: inboxPurgeWorkflowId(id),
          taskQueue,
          args: [{ inboxId: id, organizationId, batchSize }],
          workflowIdConflictPolicy: "USE_EXISTING",
          typedSearchAttributes: [
            { key: organizationKey, value: organizationId },
            { key: inboxKey, value: id },
          ],
        }),
      );
    },
  };
}

/** The business key of a webhook delivery's retries: one per endpoint and event. */
export function webhookDeliveryWorkflowId(endpointId: string, eventId: string): string {
  return `webhook/${endpointId}/${eventId}`;
}

export function createWebhookRetryStarter(
  client: Client,
  taskQueue: string,
  settings: Pick<WebhookSettings, "retryInitialMs" | "retryMaxMs">,
): WebhookRetryStarter {
  const retry = { initialMs: settings.retryInitialMs, maxMs: settings.retryMaxMs };
  return {
    async start(delivery) {
      await withStartDeadline(client, () =>
        client.workflow.start<typeof webhookDelivery>("webhookDelivery", {
          workflowId: webhookDeliveryWorkflowId(delivery.endpointId, delivery.eventId),
          taskQueue,
          args: [
            {
              deliveryId: delivery.deliveryId,
              organizationId: delivery.organizationId,
              inboxId: delivery.inboxId,
              attemptsSoFar: delivery.attempts,
              retry,
            },
          ],
          workflowIdConflictPolicy: "USE_EXISTING",
          typedSearchAttributes: [
            { key: organizationKey, value: delivery.organizationId },
            ...(delivery.inboxId ? [{ key: inboxKey, value: delivery.inboxId }] : []),
          ],
        }),
      );
    },
  };
}

/** The business key of a domain's re-check workflow: one per domain, found in the UI as domain/<domainId>. */
export function domainVerificationWorkflowId(domainId: string): string {
  return `domain/${domainId}`;
}

export function createDomainVerificationStarter(client: Client, taskQueue: string): DomainVerificationStarter {
  return {
    async start({ id, organizationId }) {
      await withStartDeadline(client, () =>
        client.workflow.start<typeof domainVerification>("domainVerification", {
          workflowId: domainVerificationWorkflowId(id),
          taskQueue,
          args: [{ domainId: id, organizationId }],
          workflowIdConflictPolicy: "USE_EXISTING",
          typedSearchAttributes: [{ key: organizationKey, value: organizationId }],
        }),
      );
    },
  };
}

/** The business key of a submission's delivery: one per submission, found in the UI as deliver/<submissionId>. */
export function deliveryWorkflowId(submissionId: string): string {
  return `deliver/${submissionId}`;
}

/**
 * Starts a submission's delivery. A run in progress is reused; an id whose run has closed is refused by Temporal
 * (REJECT_DUPLICATE), which means the submission was delivered (or given up) already: that start is done too.
 * `eager` asks the server to hand the first workflow task back to this client's own worker (the client must be on
 * the connection of a worker polling `taskQueue`): no dispatch through the task queue.
 */
export function createDeliveryStarter(client: Client, taskQueue: string, options: { eager?: boolean } = {}): DeliveryStarter {
  return {
    async start({ submissionId, organizationId, inboxId, queued, attempted, held }) {
      try {
        await withStartDeadline(client, () =>
          client.workflow.start<typeof delivery>("delivery", {
            workflowId: deliveryWorkflowId(submissionId),
            taskQueue,
            args: [
              {
                submissionId,
                organizationId,
                inboxId,
                ...(queued ? { queued } : {}),
                ...(attempted ? { attempts: attempted, attemptedBeforeStart: true } : {}),
                ...(held ? { held: true } : {}),
              },
            ],
            workflowIdConflictPolicy: "USE_EXISTING",
            workflowIdReusePolicy: "REJECT_DUPLICATE",
            ...(options.eager ? { requestEagerStart: true } : {}),
            staticSummary: deliverySummary({ domains: queued?.domains.length, held, retrying: attempted !== undefined }),
            typedSearchAttributes: deliverySearchAttributes(organizationId, inboxId),
          }),
        );
      } catch (e) {
        if (e instanceof WorkflowExecutionAlreadyStartedError) return;
        throw e;
      }
    },
  };
}

function deliverySearchAttributes(organizationId: string, inboxId: string | null) {
  return [{ key: organizationKey, value: organizationId }, ...(inboxId ? [{ key: inboxKey, value: inboxId }] : [])];
}

/**
 * The one line the Temporal UI shows for a delivery before anything is opened: counts and the hold, never an
 * address, a subject or content. How it went is the workflow's current details and its result.
 */
export function deliverySummary(known: {
  readonly domains?: number | undefined;
  readonly held?: { readonly reason: string; readonly recipients: number } | undefined;
  /** The delivery queue made the first attempts and hands over the domains they left open. */
  readonly retrying?: boolean;
}): string {
  if (known.held) return `Held for approval (${known.held.reason}): ${known.held.recipients} recipient${known.held.recipients === 1 ? "" : "s"}`;
  const domains = known.domains === undefined ? "" : ` to ${known.domains} recipient domain${known.domains === 1 ? "" : "s"}`;
  return known.retrying ? `Retries${domains} after the delivery queue's first attempt` : `Delivery${domains}`;
}

/** The signal that wakes a held submission's delivery workflow when a person decided (workflows/delivery-hold.ts). */
export const HOLD_DECIDED_SIGNAL = "holdDecided";

/**
 * Wakes the delivery workflow of a decided submission: a signal, with a start when it has no workflow (its
 * announcement was lost), which then finds the decision in PostgreSQL. A workflow that closed already needs nothing.
 */
export function createHoldDecisionNotifier(client: Client, taskQueue: string): HoldDecisionNotifier {
  return {
    async decided({ submissionId, organizationId, inboxId }) {
      try {
        await withStartDeadline(client, () =>
          client.workflow.signalWithStart<typeof delivery, []>("delivery", {
            workflowId: deliveryWorkflowId(submissionId),
            taskQueue,
            args: [{ submissionId, organizationId, inboxId, held: true }],
            signal: HOLD_DECIDED_SIGNAL,
            workflowIdReusePolicy: "REJECT_DUPLICATE",
            staticSummary: "Delivery of a decided hold",
            typedSearchAttributes: deliverySearchAttributes(organizationId, inboxId),
          }),
        );
      } catch (e) {
        if (e instanceof WorkflowExecutionAlreadyStartedError) return;
        throw e;
      }
    },
  };
}

/** The business key of a message's scan, findable in the Temporal UI as attachment-scan/<messageId>. */
export function attachmentScanWorkflowId(messageId: string): string {
  return `attachment-scan/${messageId}`;
}

/**
 * Starts the durable scan of a stored message's attachments: one workflow per message, started after the message
 * commits, under a business key so that repeated starts (inbound retries, the reconciler) join the running scan.
 */
export function createAttachmentScanStarter(client: Client, taskQueue: string): AttachmentScanStarter {
  return {
    async start({ messageId, organizationId, inboxId }) {
      await client.workflow.start<typeof attachmentScan>("attachmentScan", {
        workflowId: attachmentScanWorkflowId(messageId),
        taskQueue,
        args: [{ organizationId, inboxId, messageId }],
        workflowIdConflictPolicy: "USE_EXISTING",
        typedSearchAttributes: [
          { key: organizationKey, value: organizationId },
          { key: inboxKey, value: inboxId },
        ],
      });
    },
  };
}
