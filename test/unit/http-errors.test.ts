import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { ErrorDetailSchema } from "../../gen/mailbox/v1/errors_pb.js";
import { httpErrorOf } from "../../src/rest/http-errors.js";

const withDetail = (code: Code, errorCode: string, retryAfterSeconds = 0) =>
  new ConnectError("m", code, undefined, [{ desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { code: errorCode, retryAfterSeconds }) }]);

describe("the JSON face's error table", () => {
  test.each([
    ["a domain conflict", withDetail(Code.AlreadyExists, "inbox_address_unavailable"), 409, "inbox_address_unavailable"],
    ["a deleted send result", withDetail(Code.FailedPrecondition, "idempotency_result_expired"), 410, "idempotency_result_expired"],
    ["a deleted webhook", withDetail(Code.FailedPrecondition, "webhook_endpoint_deleted"), 410, "webhook_endpoint_deleted"],
    ["a missing scope", withDetail(Code.PermissionDenied, "missing_scope"), 403, "missing_scope"],
    ["an unimplemented RPC", new ConnectError("x", Code.Unimplemented), 501, "not_implemented"],
    ["an unusable key", new ConnectError("x", Code.Unauthenticated), 401, "unauthenticated"],
    ["an unavailable dependency", new ConnectError("x", Code.Unavailable), 503, "unavailable"],
    ["an unexpected error", new Error("boom"), 500, "internal_error"],
  ])("maps %s to %i %s", (_what, error, status, code) => {
    const mapped = httpErrorOf(error);
    expect(mapped.status).toBe(status);
    expect(mapped.body.error).toBe(code);
  });

  test("carries a rate limit's wait as Retry-After, not in the body", () => {
    const mapped = httpErrorOf(withDetail(Code.ResourceExhausted, "rate_limited", 17));
    expect(mapped).toEqual({ status: 429, body: { error: "rate_limited", message: "m" }, retryAfterSeconds: 17 });
  });

  test("never leaks the message of an unexpected error", () => {
    expect(httpErrorOf(new Error("password=hunter2")).body.message).not.toContain("hunter2");
  });
});
