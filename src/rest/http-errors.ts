// The JSON face's error table: ConnectError → HTTP status and the spec's {error, message} body.
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../../gen/mailbox/v1/errors_pb.js";
import { DEFAULT_ERROR_CODE, HTTP_STATUS_BY_CONNECT_CODE, HTTP_STATUS_BY_ERROR_CODE } from "../errors.js";

export interface HttpError {
  readonly status: number;
  readonly body: { error: string; message: string };
  readonly retryAfterSeconds: number;
}

export function httpErrorOf(e: unknown): HttpError {
  const err = ConnectError.from(e);
  const detail = err.findDetails(ErrorDetailSchema)[0];
  const code = detail?.code || DEFAULT_ERROR_CODE[err.code];
  const status = HTTP_STATUS_BY_ERROR_CODE[code] ?? HTTP_STATUS_BY_CONNECT_CODE[err.code];
  // Only messages written for callers (domain errors, validation, Connect's own protocol errors) are shown.
  const unexpected = !detail && (err.code === Code.Internal || err.code === Code.Unknown);
  const message = unexpected ? "internal error" : err.rawMessage;
  return { status, body: { error: code, message }, retryAfterSeconds: detail?.retryAfterSeconds ?? 0 };
}

export function httpError(status: number, error: string, message: string): HttpError {
  return { status, body: { error, message }, retryAfterSeconds: 0 };
}
