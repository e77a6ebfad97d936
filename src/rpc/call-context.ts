// What a handler reads from the call context that the interceptors filled in.
import type { HandlerContext } from "@connectrpc/connect";
import type { Principal } from "../auth/principal.js";
import type { TenantStore } from "../db/tenant-store.js";
import { kPrincipal, kTenant } from "../interceptors/context.js";

export function callerOf(ctx: HandlerContext): { principal: Principal; store: TenantStore } {
  const principal = ctx.values.get(kPrincipal);
  const store = ctx.values.get(kTenant);
  if (!principal || !store) throw new Error("the auth and unit-of-work interceptors did not run");
  return { principal, store };
}
