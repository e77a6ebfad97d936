// The organization's suppression list as the API shows it: addresses sending to which is refused, added by
// delivery (hard bounces), by feedback reports (complaints, see feedback-reports.ts) or manually. Listed newest
// first with keyset cursors; removing an address lets mail to it be sent again.
import type { Principal } from "../auth/principal.js";
import { requireUnrestrictedInboxes } from "../auth/principal.js";
import { Suppression } from "../db/entities/index.js";
import type { SuppressionRow } from "../db/entities/suppression.js";
import type { TenantStore } from "../db/tenant-store.js";
import { InvalidRequest, NotFound } from "../errors.js";
import type { Page } from "../inboxes/inboxes.js";
import { afterPosition, DEFAULT_PAGE_SIZE, type CursorCodec } from "../pagination/cursor.js";
import { parseAddress } from "../validation/syntax.js";

export type Suppressions = ReturnType<typeof createSuppressions>;

export function createSuppressions(deps: { readonly cursors: CursorCodec }) {
  return {
    async list(store: TenantStore, page: { limit?: number; cursor?: string }): Promise<Page<SuppressionRow>> {
      const scope = { organizationId: store.organizationId, resource: "suppressions" };
      const position = page.cursor === undefined ? undefined : deps.cursors.decode(scope, page.cursor);
      const limit = page.limit ?? DEFAULT_PAGE_SIZE;
      const rows = await store.find(Suppression, afterPosition(position), {
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        limit: limit + 1,
        disableIdentityMap: true,
      });
      const items = rows.slice(0, limit);
      const last = items[items.length - 1];
      return { items, nextCursor: rows.length > limit && last ? deps.cursors.encode(scope, last) : undefined };
    },

    /**
     * Removes the address, written in any case, from the list. An address that is not suppressed is a 404: the
     * caller learns that the removal it meant did nothing (a typo, or another spelling of the address).
     */
    async delete(store: TenantStore, principal: Principal, email: string): Promise<void> {
      // The list is the organization's sending policy, as webhook endpoints are its configuration.
      requireUnrestrictedInboxes(principal, "remove suppressions");
      const address = parseAddress(email);
      if (!address.ok) throw new InvalidRequest(`email: ${address.problem}`);
      const removed = await store.em.nativeDelete(Suppression, { organization: store.organizationId, email: address.normalized });
      if (removed === 0) throw new NotFound("suppression");
    },
  };
}
