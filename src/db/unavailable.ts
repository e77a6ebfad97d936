// A database that cannot be reached (restarting, refusing connections, a connection cut mid-statement) is a
// temporary condition of the service, not a defect: the RPC error boundary answers it 503 with Retry-After instead
// of 500, and the caller retries. Recognised from the pg driver, pg-pool and MikroORM, whichever wrapped it.
import { ConnectionException } from "@mikro-orm/core";
import { Unavailable } from "../errors.js";

/** How long a caller is told to wait: PostgreSQL restarts in seconds. */
const RETRY_AFTER_S = 2;

/** SQLSTATEs of a server that is going away or not taking connections (class 08 is matched by prefix). */
const UNAVAILABLE_STATES = new Set(["57P01", "57P02", "57P03", "53300"]);
/** Socket errors of the driver's connection. */
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"]);
/** pg and pg-pool raise these as plain Errors without a code. */
const CONNECTION_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

export function databaseUnavailableOf(e: unknown): Unavailable | undefined {
  for (let cause = e, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth++) {
    if (cause instanceof ConnectionException || isConnectionFailure(cause)) {
      return new Unavailable("unavailable", "the database is unavailable; retry shortly", RETRY_AFTER_S);
    }
  }
  return undefined;
}

function isConnectionFailure(e: Error): boolean {
  const code = (e as { code?: unknown }).code;
  if (typeof code === "string" && (code.startsWith("08") || UNAVAILABLE_STATES.has(code) || SOCKET_CODES.has(code))) return true;
  return CONNECTION_MESSAGES.test(e.message);
}
