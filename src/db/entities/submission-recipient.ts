import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/** One recipient of a submission: its own state, attempts and the last response of its server. */
export const SubmissionRecipient = defineEntity({
  name: "SubmissionRecipient",
  tableName: "submission_recipients",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    submissionId: p.uuid(),
    /** 0-based position in the submission's recipient list. */
    position: p.integer(),
    email: p.string().length(320),
    name: p.string().length(200).nullable(),
    domain: p.string().length(253),
    /** to, cc or bcc: how the send addressed the recipient (bcc recipients are in no header). */
    kind: p.string().length(3).default("to"),
    /** pending, queued, deferred, delivered, bounced or failed; held while its submission waits for a decision, rejected after one. */
    status: p.string().length(20).default("pending"),
    response: p.text().nullable(),
    failureCode: p.string().length(64).nullable(),
    attempts: p.integer().default(0),
    deliveredAt: p.datetime(3).nullable(),
    updatedAt: p.datetime(3),
  },
  uniques: [{ properties: ["submissionId", "position"] }],
  indexes: [{ properties: ["organization", "updatedAt"] }],
});

export type SubmissionRecipientRow = InferEntity<typeof SubmissionRecipient>;
