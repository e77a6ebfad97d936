// The suppression list before outbound delivery exists. Addresses are suppressed by delivery (hard bounces,
// complaints); no code path can suppress one yet, so every organization's list is empty by construction and this
// answer is the true one. Outbound delivery replaces it with a query on its suppressions table.
import type { SuppressionLookup } from "./validator.js";

export const EMPTY_SUPPRESSION_LISTS: SuppressionLookup = {
  suppressedAmong: () => Promise.resolve(new Set<string>()),
};
