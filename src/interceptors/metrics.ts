// API call metrics at the edge's one pipeline: the outermost interceptor times every call that reaches the chain,
// and the request gate's refusals (a key refused before the body is read) are counted the same way. Labels are
// the RPC method, the face and the Connect code, never who called.
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { ApiFace, ApiMetrics } from "../metrics/metrics.js";
import type { AuthenticateRequest } from "./authenticate.js";
import { kFace } from "./context.js";

export function observeCalls(metrics: ApiMetrics): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const face = req.contextValues.get(kFace);
    const observe = (code: string) => metrics.observe(req.method.name, face, code, (performance.now() - started) / 1000);
    try {
      const res = await next(req);
      // A stream's outcome (a refusal such as 429 too_many_streams included) comes while its messages are read.
      if (res.stream) return { ...res, message: observedStream(res.message, observe) };
      observe("ok");
      return res;
    } catch (e) {
      observe(codeName(ConnectError.from(e).code));
      throw e;
    }
  };
}

async function* observedStream<T>(messages: AsyncIterable<T>, observe: (code: string) => void): AsyncGenerator<T> {
  let code = "canceled"; // the client went away: the generator is returned mid-stream
  try {
    yield* messages;
    code = "ok";
  } catch (e) {
    code = codeName(ConnectError.from(e).code);
    throw e;
  } finally {
    observe(code);
  }
}

/**
 * The request gate, with the refusals of a method's call counted (its successes are counted by observeCalls when
 * the call ends). /mcp is gated before its body names a tool, and a request without a key may still list tools: its
 * refusal is not a call's, and a tool call it makes is counted when it reaches the chain.
 */
export function observeGate(gate: AuthenticateRequest, metrics: ApiMetrics): AuthenticateRequest {
  return async (apiKey, values, method: DescMethod | undefined) => {
    const started = performance.now();
    try {
      await gate(apiKey, values, method);
    } catch (e) {
      if (method) metrics.observe(method.name, values.get(kFace), codeName(ConnectError.from(e).code), (performance.now() - started) / 1000);
      throw e;
    }
  };
}

/** The face of a request the Connect router serves, from its content type. */
export function routerFaceOf(contentType: string | undefined): ApiFace {
  const type = (contentType ?? "").toLowerCase();
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  return "connect";
}

const CODE_NAMES = new Map<Code, string>(
  Object.entries(Code)
    .filter((e): e is [string, Code] => typeof e[1] === "number")
    .map(([name, code]) => [code, name.replace(/[A-Z]/g, (c, i: number) => (i === 0 ? "" : "_") + c.toLowerCase())]),
);

/** A Connect code as its snake_case name (not_found, resource_exhausted). */
export function codeName(code: Code): string {
  return CODE_NAMES.get(code) ?? "unknown";
}
