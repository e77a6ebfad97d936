// The organization's suppression list, as validation reads it: the rows outbound delivery writes (hard bounces,
// complaints) and operators add. Addresses are stored lower-cased, as validation normalises them.
import type { Database } from "../db/database.js";
import { Suppression } from "../db/entities/index.js";
import type { SuppressionLookup } from "./validator.js";

export function createSuppressionLookup(db: Database): SuppressionLookup {
  return {
    async suppressedAmong(organizationId, addresses) {
      const rows = await db.fork().find(
        Suppression,
        { organization: organizationId, email: { $in: [...addresses] } },
        { fields: ["email"] },
      );
      return new Set(rows.map((r) => r.email));
    },
  };
}
