// The organization's suppression list, as validation reads it: the rows outbound delivery writes (hard bounces,
// complaints) and operators add. Addresses are stored lower-cased, as validation normalises them.
// One plain statement with the addresses as a bound array: no unit of work is needed for a read this hot.
import type { Database } from "../db/database.js";
import { suppressedAmong } from "../db/tables/suppressions.js";
import type { SuppressionLookup } from "./validator.js";

export function createSuppressionLookup(db: Database): SuppressionLookup {
  return {
    async suppressedAmong(organizationId, addresses) {
      const { text, values } = suppressedAmong(organizationId, [...addresses]);
      const rows = await db.sql.query<{ email: string }>(text, values);
      return new Set(rows.map((r) => r.email));
    },
  };
}
