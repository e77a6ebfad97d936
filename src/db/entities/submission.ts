import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import type { StoredAddress } from "./message.js";
import { Organization } from "./organization.js";

/**
 * The delivery of one outbound message. The composed MIME is stored once, so every attempt to every recipient
 * sends the same bytes with the same Message-ID.
 */
export const Submission = defineEntity({
  name: "Submission",
  tableName: "submissions",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** The sending inbox, or null for /v1/send. */
    inboxId: p.string().length(28).nullable(),
    /** The stored mailbox message, or null for /v1/send. */
    messageId: p.string().length(28).nullable(),
    from: p.json<StoredAddress>(),
    subject: p.text(),
    metadata: p.json<Record<string, unknown>>(),
    internetMessageId: p.string().length(998),
    mime: p.blob().lazy(),
    /** pending, queued, deferred, delivered, partially_delivered or failed; held (waits for a person's decision), rejected. */
    status: p.string().length(30).default("pending"),
    queueId: p.string().length(64).nullable(),
    /** The Temporal task queue of the deployment that accepted it: only its workers deliver it. Null before it was recorded. */
    taskQueue: p.string().length(255).nullable(),
    /** While a worker holds it without a workflow (the delivery queue's lease): past this, another worker takes it over. */
    claimExpiresAt: p.datetime(3).nullable(),
    response: p.text().nullable(),
    failureCode: p.string().length(64).nullable(),
    /** Why the send was held (first_contact, new_domain or all), or null when it never was; kept after the decision. */
    heldReason: p.string().length(20).nullable(),
    /** The key that sent it, which may never decide it (null for submissions stored before holds existed). */
    createdByKeyId: p.uuid().nullable(),
    /** When a held submission was approved, rejected or expired, and by which key (null for an expiry). */
    decidedAt: p.datetime(3).nullable(),
    decidedByKeyId: p.uuid().nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
  indexes: [
    { properties: ["organization", "createdAt"] },
    // ListSubmissions by state: status=held is the queue of sends waiting for a decision.
    { properties: ["organization", "status", "createdAt"] },
    { properties: ["status", "createdAt"] },
    // The inbox purge and feedback reports (ARF names the Message-ID) find submissions by these.
    { properties: ["inboxId"] },
    { properties: ["internetMessageId"] },
    // The delivery queue looks for leases that ran out; the partial index holds only the submissions under a lease.
    {
      name: "submissions_claim_expires_at_index",
      expression: `create index "submissions_claim_expires_at_index" on "submissions" ("task_queue", "claim_expires_at") where "claim_expires_at" is not null`,
    },
  ],
});

export type SubmissionRow = InferEntity<typeof Submission>;
