// The principal of an API key, as the service's authenticator reads it: for tests that call domain functions
// directly, with the key's real scopes and restrictions.
import { createAuthenticator } from "../../src/auth/authenticator.js";
import type { Principal } from "../../src/auth/principal.js";
import type { Database } from "../../src/db/database.js";

export function principalOf(db: Database, key: string): Promise<Principal> {
  return createAuthenticator(db, { cacheMs: 0, failuresPerMinute: 100 }).authenticate(key, "127.0.0.1");
}
