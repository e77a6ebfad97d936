// The organization's suppression list as the API shows it: addresses sending to which is refused, added by
// delivery (hard bounces), by feedback reports (complaints, see feedback-reports.ts) or manually. Listed newest
// first with keyset cursors; removing an address lets mail to it be sent again.
import type { Principal } from "../auth/principal.js";
import { requireUnrestrictedInboxes } from "../auth/principal.js";
import { Suppression } from "../db/entities/index.js";
import type { SuppressionRow } from "../db/entities/suppression.js";
import type { TenantStore } from "../db/tenant-store.js";
import { InvalidRequest, NotFound } from "../errors.js";
import type { CursorCodec } from "../pagination/cursor.js";
import { newestFirstPage, type Page, type PageRequest } from "../pagination/keyset.js";
import { parseAddress } from "../validation/syntax.js";

export type Suppressions = ReturnType<typeof createSuppressions>;

export function createSuppressions(deps: { readonly cursors: CursorCodec }) {
  return {
    list(store: TenantStore, page: PageRequest): Promise<Page<SuppressionRow>> {
      return newestFirstPage(store, deps.cursors, { entity: Suppression, resource: "suppressions" }, page);
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
      const removed = await store.nativeDelete(Suppression, { email: address.normalized });
      if (removed === 0) throw new NotFound("suppression");
    },
  };
}
