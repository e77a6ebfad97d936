// Authenticates every call by its x-api-key and checks the scope the method declares in the contract.
import { getOption, type DescMethod } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { method as methodRule } from "../../gen/mailbox/v1/options_pb.js";
import type { Authenticator } from "../auth/authenticator.js";
import { hasScope } from "../auth/principal.js";
import { PermissionDenied } from "../errors.js";
import { kPeerAddress, kPrincipal } from "./context.js";

const scopes = new WeakMap<DescMethod, string>();

export function scopeOf(method: DescMethod): string {
  let scope = scopes.get(method);
  if (scope === undefined) {
    scope = getOption(method, methodRule).scope;
    scopes.set(method, scope);
  }
  return scope;
}

export function authenticate(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    const principal = await authenticator.authenticate(req.header.get("x-api-key"), req.contextValues.get(kPeerAddress));
    const scope = scopeOf(req.method);
    if (!hasScope(principal, scope)) {
      throw new PermissionDenied(`this key lacks the scope ${scope}`, "missing_scope");
    }
    req.contextValues.set(kPrincipal, principal);
    return next(req);
  };
}
