// Tenant scoping that cannot be forgotten: domain code gets a TenantStore, never a bare EntityManager, and every
// read and write through it carries the caller's organization. The EntityManager stays private, so no caller can
// step around the organization filter.
import {
  IsolationLevel,
  LockMode,
  type EntityData,
  type EntityName,
  type FilterQuery,
  type FindOneOptions,
  type FindOptions,
  type RequiredEntityData,
} from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { PermissionDenied } from "../errors.js";
import type { SqlPool, SqlTx } from "./database.js";
import { Organization, type OrganizationRow } from "./entities/organization.js";

/** A transaction of plain SQL for one organization: every statement names organization_id itself. */
export interface TenantSqlTx extends SqlTx {
  readonly organizationId: string;
}

/** An entity whose rows belong to one organization. */
export interface TenantOwned {
  organization: unknown;
}

/** A row's data without its organization, which the store sets. */
export type NewRow<T> = Omit<RequiredEntityData<T>, "organization">;

/** A per-organization limit on the rows of one entity (spec platformLimits). */
export interface OrganizationLimit<T extends TenantOwned> {
  readonly entity: EntityName<T>;
  /** The rows that count against the limit. */
  readonly counted: FilterQuery<T>;
  readonly max: number;
  /** What is counted, for the refusal's message ("inboxes"). */
  readonly noun: string;
  /** The code of the 403 that refuses a create at the limit. */
  readonly errorCode: string;
}

export class TenantStore {
  private forked: EntityManager | undefined;

  /** `fork` is called when the ORM is first used: a call that reads through plain statements never needs it. */
  constructor(
    private readonly fork: () => EntityManager,
    readonly organizationId: string,
    private readonly sql: SqlPool,
  ) {}

  private get em(): EntityManager {
    return (this.forked ??= this.fork());
  }

  findOne<T extends TenantOwned, H extends string = never>(
    entity: EntityName<T>,
    where: FilterQuery<T>,
    options?: FindOneOptions<T, H>,
  ) {
    return this.em.findOne(entity, this.scoped(where), options);
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

  /** A new row of this organization, inserted by the next flush. */
  create<T extends TenantOwned>(entity: EntityName<T>, data: NewRow<T>): T {
    return this.em.create(entity, { ...data, organization: this.organizationId } as never);
  }

  /** Deletes this organization's rows that match, in one statement; answers how many. */
  nativeDelete<T extends TenantOwned>(entity: EntityName<T>, where: FilterQuery<T>): Promise<number> {
    return this.em.nativeDelete(entity, this.scoped(where));
  }

  /** Updates this organization's rows that match, in one statement; answers how many. */
  nativeUpdate<T extends TenantOwned>(
    entity: EntityName<T>,
    where: FilterQuery<T>,
    data: Omit<EntityData<T>, "organization">,
  ): Promise<number> {
    return this.em.nativeUpdate(entity, this.scoped(where), data as never);
  }

  /** Writes the changes of the entities this store loaded or created (all of them this organization's). */
  flush(): Promise<void> {
    return this.forked ? this.forked.flush() : Promise.resolve();
  }

  /** Runs fn in one transaction, with a store bound to the same organization. */
  transactional<R>(fn: (store: TenantStore) => Promise<R>): Promise<R> {
    return this.em.transactional((em) => fn(new TenantStore(() => em, this.organizationId, this.sql)));
  }

  /**
   * Runs fn's reads in one snapshot (a read-only REPEATABLE READ transaction), so rows read by separate statements
   * agree: a submission's status and its recipients' states, written together, are never read half old, half new.
   */
  readSnapshot<R>(fn: (store: TenantStore) => Promise<R>): Promise<R> {
    return this.em.transactional((em) => fn(new TenantStore(() => em, this.organizationId, this.sql)), {
      isolationLevel: IsolationLevel.REPEATABLE_READ,
      readOnly: true,
    });
  }

  /**
   * Creates under a per-organization limit: in one transaction that holds the organization's row lock, so
   * concurrent creates of one organization run one at a time and neither the count nor anything `create` reads can
   * change underneath. Refuses with `403 <limit.errorCode>` when `limit.max` rows count already, then runs
   * `create` (which may refuse further, and may change the locked organization row) and flushes. A unique
   * constraint the insert violates reaches the error boundary, which maps it (src/db/unique-conflicts.ts).
   */
  createWithinLimit<T extends TenantOwned, R>(
    limit: OrganizationLimit<T>,
    create: (tx: TenantStore, organization: OrganizationRow) => Promise<R> | R,
  ): Promise<R> {
    return this.transactional(async (tx) => {
      const organization = await tx.em.findOneOrFail(Organization, tx.organizationId, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if ((await tx.count(limit.entity, limit.counted)) >= limit.max) {
        throw new PermissionDenied(`the organization has reached its limit of ${limit.max} ${limit.noun}`, limit.errorCode);
      }
      const result = await create(tx, organization);
      await tx.flush();
      return result;
    });
  }

  /**
   * A transaction of plain SQL with bound parameters on the driver's pool, for hot write paths (outbound
   * acceptance) where the ORM would inline a composed message into the statement text.
   */
  sqlTransaction<R>(fn: (tx: TenantSqlTx) => Promise<R>): Promise<R> {
    return this.sql.transaction((tx) => fn({ organizationId: this.organizationId, query: (text, values) => tx.query(text, values) }));
  }

  /**
   * One plain statement (`$n` parameters) on the driver's pool, for reads the ORM cannot express or would hydrate
   * at a cost. Like sqlTransaction, the statement names the organization itself: `fn` gets its id to bind.
   */
  sqlRead<T>(fn: (organizationId: string) => { readonly text: string; readonly values: readonly unknown[] }): Promise<T[]> {
    const { text, values } = fn(this.organizationId);
    return this.sql.query<T>(text, values);
  }

  // Typed loosely on purpose: the public signatures above check `where`; MikroORM's index-aware filter types
  // cannot be expressed for a generic T.
  private scoped<T>(where: FilterQuery<T>): never {
    return { $and: [where, { organization: this.organizationId }] } as never;
  }
}
