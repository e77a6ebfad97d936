// What a handler reads from the call context that the interceptors filled in.
import type { HandlerContext } from "@connectrpc/connect";
import type { Principal } from "../auth/principal.js";
import type { TenantStore } from "../db/tenant-store.js";
import { requireScope } from "../interceptors/authenticate.js";
import { kPrincipal, kReauthenticate, kTenant } from "../interceptors/context.js";

export function callerOf(ctx: HandlerContext): { principal: Principal; store: TenantStore } {
  const principal = ctx.values.get(kPrincipal);
  const store = ctx.values.get(kTenant);
  if (!principal || !store) throw new Error("the auth and unit-of-work interceptors did not run");
  return { principal, store };
}

/**
 * How the call's key stands now, for a call that outlives its authentication (a stream): authenticated again (a
 * revoked or expired key, a suspended organization throw the error a new call would get) and its method's scope
 * checked again.
 */
export function principalNow(ctx: HandlerContext): () => Promise<Principal> {
  const reauthenticate = ctx.values.get(kReauthenticate);
  if (!reauthenticate) throw new Error("the request was not authenticated before its call");
  return async () => {
    const principal = await reauthenticate();
    requireScope(principal, ctx.method);
    return principal;
  };
}
