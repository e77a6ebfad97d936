// Tenant scoping that cannot be forgotten: domain code gets a TenantStore, never a bare EntityManager, and every
// read and write through it carries the caller's organization.
import type { EntityName, FilterQuery, FindOptions } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { SqlPool, SqlTx } from "./database.js";

/** A transaction of plain SQL for one organization: every statement names organization_id itself. */
export interface TenantSqlTx extends SqlTx {
  readonly organizationId: string;
}

/** An entity whose rows belong to one organization. */
export interface TenantOwned {
  organization: unknown;
}

export class TenantStore {
  constructor(
    readonly em: EntityManager,
    readonly organizationId: string,
    private readonly sql?: SqlPool,
  ) {}

  findOne<T extends TenantOwned>(entity: EntityName<T>, where: FilterQuery<T>): Promise<T | null> {
    return this.em.findOne(entity, this.scoped(where));
  }

  find<T extends TenantOwned, H extends string = never>(
    entity: EntityName<T>,
    where: FilterQuery<T>,
    options?: FindOptions<T, H>,
  ) {
    return this.em.find(entity, this.scoped(where), options);
  }

  count<T extends TenantOwned>(entity: EntityName<T>, where: FilterQuery<T>): Promise<number> {
    return this.em.count(entity, this.scoped(where));
  }

  /** Runs fn in one transaction, with a store bound to the same organization. */
  transactional<R>(fn: (store: TenantStore) => Promise<R>): Promise<R> {
    return this.em.transactional((em) => fn(new TenantStore(em, this.organizationId, this.sql)));
  }

  /**
   * A transaction of plain SQL with bound parameters on the driver's pool, for hot write paths (outbound
   * acceptance) where the ORM would inline a composed message into the statement text.
   */
  sqlTransaction<R>(fn: (tx: TenantSqlTx) => Promise<R>): Promise<R> {
    return this.pool().transaction((tx) => fn({ organizationId: this.organizationId, query: (text, values) => tx.query(text, values) }));
  }

  /**
   * One plain statement on the driver's pool for a hot read, where the ORM's hydration costs more than the query.
   * Like sqlTransaction, the statement names the organization itself: `fn` gets its id to bind.
   */
  sqlRead<T>(fn: (organizationId: string) => { readonly text: string; readonly values: readonly unknown[] }): Promise<T[]> {
    const { text, values } = fn(this.organizationId);
    return this.pool().query<T>(text, values);
  }

  private pool(): SqlPool {
    if (!this.sql) throw new Error("this store was made without the SQL pool");
    return this.sql;
  }

  // Typed loosely on purpose: the public signatures above check `where`; MikroORM's index-aware filter types
  // cannot be expressed for a generic T.
  private scoped<T>(where: FilterQuery<T>): never {
    return { $and: [where, { organization: this.organizationId }] } as never;
  }
}
