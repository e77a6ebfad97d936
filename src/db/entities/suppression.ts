import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/** A recipient address the organization must not send to (hard bounce, complaint, or manual). */
export const Suppression = defineEntity({
  name: "Suppression",
  tableName: "suppressions",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Lower-cased. */
    email: p.string().length(320),
    /** hard_bounce, complaint or manual. */
    reason: p.string().length(20),
    detail: p.text().nullable(),
    createdAt: p.datetime(3),
  },
  uniques: [{ properties: ["organization", "email"] }],
  indexes: [{ properties: ["organization", "createdAt", "id"] }],
});

export type SuppressionRow = InferEntity<typeof Suppression>;
