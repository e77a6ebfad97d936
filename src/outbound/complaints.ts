// Complaints about the organization's mail (recorded from ARF feedback reports by feedback-reports.ts), listed
// newest first with keyset cursors.
import { Complaint } from "../db/entities/index.js";
import type { ComplaintRow } from "../db/entities/complaint.js";
import type { TenantStore } from "../db/tenant-store.js";
import type { Page } from "../inboxes/inboxes.js";
import { afterPosition, DEFAULT_PAGE_SIZE, type CursorCodec } from "../pagination/cursor.js";

export type Complaints = ReturnType<typeof createComplaints>;

export function createComplaints(deps: { readonly cursors: CursorCodec }) {
  return {
    async list(store: TenantStore, page: { limit?: number; cursor?: string }): Promise<Page<ComplaintRow>> {
      const scope = { organizationId: store.organizationId, resource: "complaints" };
      const position = page.cursor === undefined ? undefined : deps.cursors.decode(scope, page.cursor);
      const limit = page.limit ?? DEFAULT_PAGE_SIZE;
      const rows = await store.find(Complaint, afterPosition(position), {
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        limit: limit + 1,
        disableIdentityMap: true,
      });
      const items = rows.slice(0, limit);
      const last = items[items.length - 1];
      return { items, nextCursor: rows.length > limit && last ? deps.cursors.encode(scope, last) : undefined };
    },
  };
}
