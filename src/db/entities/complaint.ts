import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/** An abuse report about a message the organization sent (ARF, RFC 5965): one per submission and recipient. */
export const Complaint = defineEntity({
  name: "Complaint",
  tableName: "complaints",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    email: p.string().length(320),
    feedbackType: p.string().length(64),
    submissionId: p.uuid().nullable(),
    userAgent: p.string().length(255).nullable(),
    createdAt: p.datetime(3),
  },
  indexes: [{ properties: ["organization", "createdAt", "id"] }],
  // The same report sent again, or replayed by anyone who got it, adds nothing (feedback-reports.ts).
  uniques: [{ properties: ["submissionId", "email"] }],
});

export type ComplaintRow = InferEntity<typeof Complaint>;
