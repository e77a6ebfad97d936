// One EntityManager fork per call, scoped to the caller's organization and made when the call first uses the ORM;
// flushed when a writing handler succeeds.
import { getOption, type DescMethod } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { Database } from "../db/database.js";
import { TenantStore } from "../db/tenant-store.js";
import { kPrincipal, kTenant } from "./context.js";

const reads = new WeakMap<DescMethod, boolean>();

/** A GET operation of the contract only reads: computing change sets over what it loaded would be wasted work. */
function isRead(method: DescMethod): boolean {
  let read = reads.get(method);
  if (read === undefined) {
    read = getOption(method, http).pattern.case === "get";
    reads.set(method, read);
  }
  return read;
}

export function unitOfWork(db: Database): Interceptor {
  return (next) => async (req) => {
    const principal = req.contextValues.get(kPrincipal)!;
    const store = new TenantStore(() => db.fork(), principal.organizationId, db.sql);
    req.contextValues.set(kTenant, store);
    const res = await next(req);
    if (!isRead(req.method)) await store.flush();
    return res;
  };
}
