// Typed errors thrown by domain code. They carry no transport: the error interceptor turns them into
// ConnectErrors with an ErrorDetail, and the JSON face turns those into {error, message} with an HTTP status.
import { Code } from "@connectrpc/connect";

export class DomainError extends Error {
  constructor(
    readonly code: Code,
    /** The spec's machine-readable error code, e.g. inbox_address_unavailable. */
    readonly errorCode: string,
    message: string,
    readonly retryAfterSeconds = 0,
  ) {
    super(message);
  }
}

export class InvalidRequest extends DomainError {
  constructor(message: string, errorCode = "invalid_request") {
    super(Code.InvalidArgument, errorCode, message);
  }
}

export class Unauthenticated extends DomainError {
  constructor(message = "the API key is missing, unknown, expired, revoked or not usable from this address") {
    super(Code.Unauthenticated, "unauthenticated", message);
  }
}

export class PermissionDenied extends DomainError {
  constructor(message: string, errorCode = "forbidden") {
    super(Code.PermissionDenied, errorCode, message);
  }
}

export class NotFound extends DomainError {
  /** `errorCode` names what a request's body referred to (upload_not_found) where not_found would blame the path. */
  constructor(what: string, errorCode = "not_found") {
    super(Code.NotFound, errorCode, `${what} not found`);
  }
}

export class Conflict extends DomainError {
  constructor(errorCode: string, message: string) {
    super(Code.AlreadyExists, errorCode, message);
  }
}

export class Gone extends DomainError {
  constructor(errorCode: string, message: string) {
    super(Code.FailedPrecondition, errorCode, message);
  }
}

export class RateLimited extends DomainError {
  constructor(message: string, retryAfterSeconds: number, errorCode = "rate_limited") {
    super(Code.ResourceExhausted, errorCode, message, Math.max(1, Math.ceil(retryAfterSeconds)));
  }
}

/** 503: the service is past its capacity for now (not the caller's limit); Retry-After says when to come back. */
export class Unavailable extends DomainError {
  constructor(errorCode: string, message: string, retryAfterSeconds: number) {
    super(Code.Unavailable, errorCode, message, Math.max(1, Math.ceil(retryAfterSeconds)));
  }
}

/**
 * 422: a request the contract accepts whose content the service will not take (an infected attachment, a URL it
 * may not fetch); the HTTP status comes from HTTP_STATUS_BY_ERROR_CODE.
 */
export class Unprocessable extends DomainError {
  constructor(errorCode: string, message: string) {
    super(Code.InvalidArgument, errorCode, message);
  }
}

/** 501: a part of the contract that is not served yet. */
export class NotImplemented extends DomainError {
  constructor(message: string) {
    super(Code.Unimplemented, "not_implemented", message);
  }
}

/** 413: a request whose content exceeds a limit (the HTTP status comes from HTTP_STATUS_BY_ERROR_CODE). */
export class TooLarge extends DomainError {
  constructor(errorCode: string, message: string) {
    super(Code.ResourceExhausted, errorCode, message);
  }
}

/** The error code written when a ConnectError carries no ErrorDetail. */
export const DEFAULT_ERROR_CODE: Record<Code, string> = {
  [Code.Canceled]: "canceled",
  [Code.Unknown]: "internal_error",
  [Code.InvalidArgument]: "invalid_request",
  [Code.DeadlineExceeded]: "timeout",
  [Code.NotFound]: "not_found",
  [Code.AlreadyExists]: "conflict",
  [Code.PermissionDenied]: "forbidden",
  [Code.ResourceExhausted]: "rate_limited",
  [Code.FailedPrecondition]: "failed_precondition",
  [Code.Aborted]: "conflict",
  [Code.OutOfRange]: "invalid_request",
  [Code.Unimplemented]: "not_implemented",
  [Code.Internal]: "internal_error",
  [Code.Unavailable]: "unavailable",
  [Code.DataLoss]: "internal_error",
  [Code.Unauthenticated]: "unauthenticated",
};

/** HTTP statuses of error codes whose status is not the Connect code's usual one (spec Errors table). */
export const HTTP_STATUS_BY_ERROR_CODE: Readonly<Record<string, number>> = {
  idempotency_result_expired: 410,
  webhook_endpoint_deleted: 410,
  cursor_expired: 410,
  event_expired: 410,
  payload_too_large: 413,
  page_too_large: 413,
  message_too_large: 413,
  attachment_too_large: 413,
  attachment_url_too_large: 413,
  attachment_infected: 422,
  attachment_not_clean: 422,
  attachment_url_refused: 422,
  attachment_url_failed: 422,
};

export const HTTP_STATUS_BY_CONNECT_CODE: Record<Code, number> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 409,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};
