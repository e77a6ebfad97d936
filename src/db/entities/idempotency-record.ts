import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * A claimed idempotency key of a send route. The unique (organization, route, key) makes the claim atomic: the
 * first request inserts it, every retry finds it and answers from it (replay), a conflict, or gone.
 */
export const IdempotencyRecord = defineEntity({
  name: "IdempotencyRecord",
  tableName: "idempotency_records",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** send_message, reply or send_email. */
    route: p.string().length(32),
    key: p.string().length(200),
    /** SHA-256 of the canonical request, to tell an exact retry from a conflicting reuse. */
    requestHash: p.string().length(64),
    /** pending (being accepted) or completed. */
    status: p.string().length(20),
    submissionId: p.uuid().nullable(),
    messageId: p.string().length(28).nullable(),
    createdAt: p.datetime(3),
  },
  uniques: [{ properties: ["organization", "route", "key"] }],
});

export type IdempotencyRecordRow = InferEntity<typeof IdempotencyRecord>;
