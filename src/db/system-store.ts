// The store of work no tenant asked for: reconcilers, webhook attempts, domain verification and the capability
// checks of SMTP admission and delivery read and write across organizations. They reach the ORM through a
// SystemStore, the counterpart of TenantStore: one per unit of work, the EntityManager kept private, and a name that
// says at every call site that no organization filter applies (a row's organization is what the caller checks).
import type { EntityName, FilterQuery, FindOneOptions, FindOptions } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Database } from "./database.js";

export class SystemStore {
  private forked: EntityManager | undefined;

  /** `fork` is called when the store is first used. */
  constructor(private readonly fork: () => EntityManager) {}

  private get em(): EntityManager {
    return (this.forked ??= this.fork());
  }

  // `where` is passed on loosely typed, as in TenantStore: MikroORM's index-aware filter types cannot be expressed
  // for a generic T; the public signatures check it.
  findOne<T extends object, H extends string = never, F extends string = never>(entity: EntityName<T>, where: FilterQuery<T>, options?: FindOneOptions<T, H, F>) {
    return this.em.findOne(entity, where as never, options);
  }

  find<T extends object, H extends string = never, F extends string = never>(entity: EntityName<T>, where: FilterQuery<T>, options?: FindOptions<T, H, F>) {
    return this.em.find(entity, where as never, options);
  }

  /** Writes the changes of the entities this store loaded. */
  flush(): Promise<void> {
    return this.forked ? this.forked.flush() : Promise.resolve();
  }

  /** Runs fn in one transaction (flushed at its end), with a store of that transaction. */
  transactional<R>(fn: (store: SystemStore) => Promise<R>): Promise<R> {
    return this.em.transactional((em) => fn(new SystemStore(() => em)));
  }

  /** Waits for the transaction-scoped advisory lock of a name, held until the transaction ends. */
  async lockName(name: string): Promise<void> {
    await this.em.execute("select pg_advisory_xact_lock(hashtextextended(?, 0))", [name]);
  }
}

/** A store for one unit of system work. */
export function systemStore(db: Database): SystemStore {
  return new SystemStore(() => db.fork());
}
