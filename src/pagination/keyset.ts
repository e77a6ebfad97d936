// One page of a tenant's list, newest first on (createdAt, id), with a signed cursor to the next: the shape every
// created-at ordered list of the API shares (inboxes, domains, webhooks, suppressions, complaints).
import type { EntityName, FilterQuery } from "@mikro-orm/core";
import type { TenantOwned, TenantStore } from "../db/tenant-store.js";
import { afterPosition, DEFAULT_PAGE_SIZE, type CursorCodec, type KeysetPosition } from "./cursor.js";

export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | undefined;
}

export interface PageRequest {
  readonly limit?: number | undefined;
  readonly cursor?: string | undefined;
}

export async function newestFirstPage<T extends TenantOwned & KeysetPosition>(
  store: TenantStore,
  cursors: CursorCodec,
  list: { readonly entity: EntityName<T>; readonly resource: string; readonly where?: FilterQuery<T> },
  page: PageRequest,
): Promise<Page<T>> {
  const scope = { organizationId: store.organizationId, resource: list.resource };
  const position = page.cursor === undefined ? undefined : cursors.decode(scope, page.cursor);
  const limit = page.limit ?? DEFAULT_PAGE_SIZE;
  const rows = await store.find(list.entity, { ...(list.where as object), ...afterPosition(position) } as FilterQuery<T>, {
    orderBy: [{ createdAt: "desc" }, { id: "desc" }] as never,
    limit: limit + 1,
    disableIdentityMap: true,
  });
  const items = rows.slice(0, limit) as T[];
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? cursors.encode(scope, last) : undefined };
}
