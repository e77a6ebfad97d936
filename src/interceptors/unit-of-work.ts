// One EntityManager fork per call, scoped to the caller's organization; flushed when the handler succeeds.
import type { Interceptor } from "@connectrpc/connect";
import type { Database } from "../db/database.js";
import { TenantStore } from "../db/tenant-store.js";
import { kPrincipal, kTenant } from "./context.js";

export function unitOfWork(db: Database): Interceptor {
  return (next) => async (req) => {
    const principal = req.contextValues.get(kPrincipal)!;
    const store = new TenantStore(db.fork(), principal.organizationId);
    req.contextValues.set(kTenant, store);
    const res = await next(req);
    await store.em.flush();
    return res;
  };
}
