// One page of a tenant's list, newest first on (createdAt, id), with a signed cursor to the next: the shape every
// created-at ordered list of the API shares (inboxes, domains, webhooks, suppressions, complaints). A list reads its
// rows either as entities (newestFirstPage) or, where the read is hot, as plain rows of one statement
// (newestFirstRows); the keyset, the limit and the cursor are the same for both.
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
  return keysetPage(store, cursors, list.resource, page, (position, take) =>
    store.find(list.entity, { ...(list.where as object), ...afterPosition(position) } as FilterQuery<T>, {
      orderBy: [{ createdAt: "desc" }, { id: "desc" }] as never,
      limit: take,
      disableIdentityMap: true,
    }) as Promise<T[]>,
  );
}

/** Binds a value as the statement's next `$n` parameter and answers its placeholder. */
export type Bind = (value: unknown) => string;

/** A list read as plain rows: its table has organization_id, created_at and id columns. */
export interface PlainList {
  readonly resource: string;
  readonly table: string;
  /** The select list, each column named as the row's property (`local_part as "localPart"`); createdAt and id among them. */
  readonly columns: string;
  /** Conditions beyond the organization, values bound through `bind`. */
  readonly where?: (bind: Bind) => string;
}

/**
 * The same page as newestFirstPage, read with one plain statement through TenantStore.sqlRead (which hands it the
 * organization to bind): for hot lists, where hydrating entities cost several times the query (bench:api).
 */
export async function newestFirstRows<T extends KeysetPosition>(
  store: TenantStore,
  cursors: CursorCodec,
  list: PlainList,
  page: PageRequest,
): Promise<Page<T>> {
  return keysetPage(store, cursors, list.resource, page, (position, take) =>
    store.sqlRead<T>((organizationId) => {
      const values: unknown[] = [];
      const bind: Bind = (value) => `$${values.push(value)}`;
      const conditions = [`organization_id = ${bind(organizationId)}`];
      if (list.where) conditions.push(`(${list.where(bind)})`);
      if (position) conditions.push(`(created_at, id) < (${bind(position.createdAt)}, ${bind(position.id)})`);
      return {
        text: `select ${list.columns} from ${list.table} where ${conditions.join(" and ")}
                order by created_at desc, id desc limit ${bind(take)}`,
        values,
      };
    }),
  );
}

/** Decodes the cursor for this organization and list, reads one row past the page, and signs the next cursor. */
async function keysetPage<T extends KeysetPosition>(
  store: TenantStore,
  cursors: CursorCodec,
  resource: string,
  page: PageRequest,
  read: (position: KeysetPosition | undefined, take: number) => Promise<T[]>,
): Promise<Page<T>> {
  const scope = { organizationId: store.organizationId, resource };
  const position = page.cursor === undefined ? undefined : cursors.decode(scope, page.cursor);
  const limit = page.limit ?? DEFAULT_PAGE_SIZE;
  const rows = await read(position, limit + 1);
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? cursors.encode(scope, last) : undefined };
}
