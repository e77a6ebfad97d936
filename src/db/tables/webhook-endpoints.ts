// The `webhook_endpoints` table as the webhook outbox reads it: the active endpoints of some organizations, locked
// FOR SHARE in the order an endpoint delete locks (endpoint, then its deliveries), so a delete that commits first
// leaves nothing active to a reader and one that comes second sees the deliveries the reader made and answers 409.
// The rows are written through the ORM (src/webhooks/endpoints.ts).

/** An active endpoint, as the outbox needs it to make and claim deliveries. */
export interface ActiveEndpoint {
  readonly id: string;
  readonly organization_id: string;
  readonly url: string;
  readonly signing_secret: string;
  /** The event types it receives. */
  readonly events: string[];
}

/** The columns of ActiveEndpoint with their types, for a reader that reads them beside other rows (a UNION). */
export const ACTIVE_ENDPOINT_COLUMNS = [
  ["url", "text"],
  ["signing_secret", "text"],
  ["events", "text[]"],
] as const;

/**
 * The active endpoints of the organizations `organizationIds` (an SQL expression yielding them: a subquery, or a
 * bound array with `= any`), in id order, locked FOR SHARE: for a WITH query of its own (locking is not allowed
 * in a UNION).
 */
export function activeEndpointsSelect(organizationIds: string): string {
  return `select id, organization_id, url, signing_secret, events from webhook_endpoints
           where organization_id ${organizationIds} and status = 'active' order by id for share`;
}
