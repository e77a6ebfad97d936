// The one error boundary of the RPC edge (the /v1 gateway calls the same chain): domain errors become ConnectErrors
// with an ErrorDetail, a violated unique constraint becomes the Conflict it means (src/db/unique-conflicts.ts), a
// database that cannot be reached is 503 with Retry-After (src/db/unavailable.ts), Connect's own errors keep their code, and anything else is logged with its cause and answered as a bare internal
// error.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../../gen/mailbox/v1/errors_pb.js";
import { databaseUnavailableOf } from "../db/unavailable.js";
import { uniqueConflictOf } from "../db/unique-conflicts.js";
import { DEFAULT_ERROR_CODE, DomainError } from "../errors.js";
import type { Logger } from "../logger.js";

export function errorBoundary(log: Logger): Interceptor {
  return (next) => async (req) => {
    const where = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      // A stream's errors come while its messages are read, after the call returned.
      return res.stream ? { ...res, message: mapped(res.message, log, where) } : res;
    } catch (e) {
      throw toConnectError(e, log, where);
    }
  };
}

async function* mapped<T>(messages: AsyncIterable<T>, log: Logger, where: string): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (e) {
    throw toConnectError(e, log, where);
  }
}

export function toConnectError(e: unknown, log: Logger, where: string): ConnectError {
  const domain = e instanceof DomainError ? e : (uniqueConflictOf(e) ?? databaseUnavailableOf(e));
  if (domain) return fromDomainError(domain);
  if (e instanceof ConnectError && e.code !== Code.Internal && e.code !== Code.Unknown) {
    // Errors Connect itself raised (unimplemented method, malformed protocol input) keep their code.
    if (e.findDetails(ErrorDetailSchema).length > 0) return e;
    return new ConnectError(e.rawMessage, e.code, e.metadata, [
      { desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { code: DEFAULT_ERROR_CODE[e.code] }) },
    ]);
  }
  log.error("unhandled error", { where, error: e });
  return new ConnectError("internal error", Code.Internal, undefined, [
    { desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { code: "internal_error" }) },
  ]);
}

function fromDomainError(e: DomainError): ConnectError {
  const err = new ConnectError(e.message, e.code, undefined, [
    { desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { code: e.errorCode, retryAfterSeconds: e.retryAfterSeconds }) },
  ]);
  if (e.retryAfterSeconds > 0) err.metadata.set("retry-after", String(e.retryAfterSeconds));
  return err;
}
