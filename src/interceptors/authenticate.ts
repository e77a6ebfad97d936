// Authentication in two steps. Every face authenticates a request by its x-api-key as soon as its headers are in,
// before its body is read (the Connect router's request gate, the JSON gateway before it reads the body), and
// leaves the principal in the call's context values; the interceptor then checks the scope the method declares in
// the contract. One Authenticator, one place that calls it.
import { getOption, type DescMethod } from "@bufbuild/protobuf";
import type { ContextValues, Interceptor } from "@connectrpc/connect";
import { method as methodRule } from "../../gen/mailbox/v1/options_pb.js";
import type { Authenticator } from "../auth/authenticator.js";
import { hasScope, type Principal } from "../auth/principal.js";
import { PermissionDenied, Unauthenticated } from "../errors.js";
import type { Logger } from "../logger.js";
import { kPeerAddress, kPrincipal, kReauthenticate } from "./context.js";
import { toConnectError } from "./error-boundary.js";

const scopes = new WeakMap<DescMethod, string>();

export function scopeOf(method: DescMethod): string {
  let scope = scopes.get(method);
  if (scope === undefined) {
    scope = getOption(method, methodRule).scope;
    scopes.set(method, scope);
  }
  return scope;
}

/**
 * Authenticates a request before its body is read and sets kPrincipal in its context values. It runs outside the
 * interceptor chain, so it maps its errors with the error boundary's own function: a rejected request is answered
 * in its face's protocol without a byte of its body read.
 */
export type AuthenticateRequest = (apiKey: string | null, values: ContextValues, method: DescMethod | undefined) => Promise<void>;

export function authenticateRequest(authenticator: Authenticator, log: Logger): AuthenticateRequest {
  return async (apiKey, values, method) => {
    let principal;
    try {
      principal = await authenticator.authenticate(apiKey, values.get(kPeerAddress));
    } catch (e) {
      // No method yet on /mcp, whose body (naming the tool) is read only after.
      throw toConnectError(e, log, method ? `${method.parent.typeName}/${method.name}` : "mcp");
    }
    values.set(kPrincipal, principal);
    values.set(kReauthenticate, () => authenticator.authenticate(apiKey, values.get(kPeerAddress)));
  };
}

/** The principal must hold the scope the method declares in the contract (403 missing_scope). */
export function requireScope(principal: Principal, method: DescMethod): void {
  const scope = scopeOf(method);
  if (!hasScope(principal, scope)) throw new PermissionDenied(`this key lacks the scope ${scope}`, "missing_scope");
}

export function authenticate(): Interceptor {
  return (next) => async (req) => {
    const principal = req.contextValues.get(kPrincipal);
    // Every face runs authenticateRequest first; a call that did not is refused, never authenticated a second way.
    if (!principal) throw new Unauthenticated();
    requireScope(principal, req.method);
    return next(req);
  };
}
