// Complaints about the organization's mail (recorded from ARF feedback reports by feedback-reports.ts), listed
// newest first with keyset cursors.
import { Complaint } from "../db/entities/index.js";
import type { ComplaintRow } from "../db/entities/complaint.js";
import type { TenantStore } from "../db/tenant-store.js";
import type { CursorCodec } from "../pagination/cursor.js";
import { newestFirstPage, type Page, type PageRequest } from "../pagination/keyset.js";

export type Complaints = ReturnType<typeof createComplaints>;

export function createComplaints(deps: { readonly cursors: CursorCodec }) {
  return {
    list(store: TenantStore, page: PageRequest): Promise<Page<ComplaintRow>> {
      return newestFirstPage(store, deps.cursors, { entity: Complaint, resource: "complaints" }, page);
    },
  };
}
