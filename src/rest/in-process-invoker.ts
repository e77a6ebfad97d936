// Calls an RPC's implementation in-process, through the same interceptor chain the router runs, without encoding
// the request and response to bytes and back. The JSON face uses it; the caller's context values (the socket's
// peer address) travel with the call, never in a header a client could forge.
import type { DescMethod, DescMethodServerStreaming, DescMethodUnary, Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createHandlerContext,
  type ContextValues,
  type Interceptor,
  type MethodImplSpec,
  type ServiceImplSpec,
} from "@connectrpc/connect";
import { createAsyncIterable, invokeUnaryImplementation, transformInvokeImplementation } from "@connectrpc/connect/protocol";

export interface InProcessCall {
  readonly url: string;
  readonly header: Headers;
  readonly contextValues: ContextValues;
  readonly signal: AbortSignal;
}

export type UnaryInvoker = (method: DescMethodUnary, input: Message, call: InProcessCall) => Promise<Message>;

/** The messages of a server-streaming call, pulled one at a time as the caller writes them out. */
export type StreamInvoker = (method: DescMethodServerStreaming, input: Message, call: InProcessCall) => AsyncIterable<Message>;

export function createInProcessInvoker(specs: readonly ServiceImplSpec[], interceptors: Interceptor[]): UnaryInvoker {
  const specOf = specsByMethod(specs);
  return async (method, input, call) =>
    invokeUnaryImplementation(specOf(method, "unary"), handlerContext(method, call), input, interceptors);
}

export function createInProcessStreamInvoker(specs: readonly ServiceImplSpec[], interceptors: Interceptor[]): StreamInvoker {
  const specOf = specsByMethod(specs);
  return (method, input, call) =>
    transformInvokeImplementation(specOf(method, "server_streaming"), handlerContext(method, call), interceptors)(createAsyncIterable([input]));
}

function specsByMethod(specs: readonly ServiceImplSpec[]) {
  const byMethod = new Map<DescMethod, MethodImplSpec>();
  for (const spec of specs) for (const m of Object.values(spec.methods)) byMethod.set(m.method, m);
  return <K extends MethodImplSpec["kind"]>(method: DescMethod, kind: K): MethodImplSpec & { kind: K } => {
    const spec = byMethod.get(method);
    if (spec?.kind !== kind) throw new ConnectError(`${method.parent.typeName}/${method.name} is not served`, Code.Unimplemented);
    return spec as MethodImplSpec & { kind: K };
  };
}

function handlerContext(method: DescMethod, call: InProcessCall) {
  return createHandlerContext({
    service: method.parent,
    method,
    protocolName: "rest",
    requestMethod: "POST",
    url: call.url,
    requestHeader: call.header,
    contextValues: call.contextValues,
    requestSignal: call.signal,
  });
}
