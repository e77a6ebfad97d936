// What running into a unique constraint means to the API caller whose write did. Domain code lets the violation
// propagate; the RPC error boundary (src/interceptors/error-boundary.ts) maps it here, once, whether it came from
// the ORM or a plain statement. A violation of a constraint not named here is a defect: an internal error, logged.
import { UniqueConstraintViolationException } from "@mikro-orm/core";
import pg from "pg";
import { Conflict } from "../errors.js";

/** Constraint (or unique index) name → the 409 it means. test/e2e/schema.test.ts checks that each one exists. */
export const UNIQUE_CONFLICTS = {
  // Addresses are unique across organizations and all time, a deleted inbox's too: taken is taken.
  inboxes_address_unique: () =>
    new Conflict("inbox_address_unavailable", "the address is not available: it belongs or belonged to another inbox"),
  customer_domains_organization_id_domain_unique: () =>
    new Conflict("domain_exists", "the domain is already registered in this organization"),
  // A partial unique index: among active endpoints only, so deleting an endpoint frees its url.
  webhook_endpoints_live_url_unique: () =>
    new Conflict("webhook_endpoint_exists", "an active endpoint with this url exists in the organization"),
} as const satisfies Record<string, () => Conflict>;

type MappedUniqueConstraint = keyof typeof UNIQUE_CONFLICTS;

/** PostgreSQL's SQLSTATE for unique_violation. */
const UNIQUE_VIOLATION = "23505";

/** The Conflict a unique violation means, from MikroORM or the pg driver; undefined for anything else. */
export function uniqueConflictOf(e: unknown): Conflict | undefined {
  const unique = e instanceof UniqueConstraintViolationException || (e instanceof pg.DatabaseError && e.code === UNIQUE_VIOLATION);
  if (!unique) return undefined;
  const constraint = (e as { constraint?: string }).constraint;
  return constraint !== undefined && Object.hasOwn(UNIQUE_CONFLICTS, constraint)
    ? UNIQUE_CONFLICTS[constraint as MappedUniqueConstraint]()
    : undefined;
}
