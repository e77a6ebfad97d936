// Calls an RPC's implementation in-process, through the same interceptor chain the router runs, without encoding
// the request and response to bytes and back. The JSON face uses it; the caller's context values (the socket's
// peer address) travel with the call, never in a header a client could forge.
import type { DescMethod, DescMethodUnary, Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createHandlerContext,
  type ContextValues,
  type Interceptor,
  type MethodImplSpec,
  type ServiceImplSpec,
} from "@connectrpc/connect";
import { invokeUnaryImplementation } from "@connectrpc/connect/protocol";

export interface InProcessCall {
  readonly url: string;
  readonly header: Headers;
  readonly contextValues: ContextValues;
  readonly signal: AbortSignal;
}

export type UnaryInvoker = (method: DescMethodUnary, input: Message, call: InProcessCall) => Promise<Message>;

export function createInProcessInvoker(specs: readonly ServiceImplSpec[], interceptors: Interceptor[]): UnaryInvoker {
  const byMethod = new Map<DescMethod, MethodImplSpec>();
  for (const spec of specs) for (const m of Object.values(spec.methods)) byMethod.set(m.method, m);
  return async (method, input, call) => {
    const spec = byMethod.get(method);
    if (spec?.kind !== "unary") throw new ConnectError(`${method.parent.typeName}/${method.name} is not served`, Code.Unimplemented);
    const context = createHandlerContext({
      service: method.parent,
      method,
      protocolName: "rest",
      requestMethod: "POST",
      url: call.url,
      requestHeader: call.header,
      contextValues: call.contextValues,
      requestSignal: call.signal,
    });
    return invokeUnaryImplementation(spec, context, input, interceptors);
  };
}
