// Per-call values, set by the adapters (peer address) and by interceptors (principal, tenant store).
import { createContextKey } from "@connectrpc/connect";
import type { Principal } from "../auth/principal.js";
import type { TenantStore } from "../db/tenant-store.js";
import type { ApiFace } from "../metrics/metrics.js";

/** The caller's socket address, from the HTTP connection (never from a header). */
export const kPeerAddress = createContextKey<string | undefined>(undefined, { description: "peer address" });
export const kPrincipal = createContextKey<Principal | undefined>(undefined, { description: "principal" });
/** Authenticates the call's key again, from the same peer: a long call (a stream) asks how the key stands now. */
export const kReauthenticate = createContextKey<(() => Promise<Principal>) | undefined>(undefined, { description: "reauthenticate" });
export const kTenant = createContextKey<TenantStore | undefined>(undefined, { description: "tenant store" });
/** The face a call arrived on (set by the adapters, for metrics). */
export const kFace = createContextKey<ApiFace>("connect", { description: "api face" });
