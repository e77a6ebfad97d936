// A Connect transport that calls the router's own handlers in memory. The JSON face uses it so that every /v1
// request runs through the same interceptors as typed RPC. Unlike Connect's createRouterTransport it passes the
// caller's context values (the socket's peer address), which must not travel in a spoofable header.
import type { ContextValues } from "@connectrpc/connect";
import { createAsyncIterable, type UniversalClientFn, type UniversalHandler } from "@connectrpc/connect/protocol";
import { createTransport } from "@connectrpc/connect/protocol-connect";
import type { Transport } from "@connectrpc/connect";

export function createInProcessTransport(
  handlers: ReadonlyMap<string, UniversalHandler>,
  contextValues: ContextValues,
): Transport {
  const httpClient: UniversalClientFn = async (req) => {
    const path = new URL(req.url).pathname;
    const handler = handlers.get(path);
    if (!handler) throw new Error(`no handler for ${path}`);
    const res = await handler({
      httpVersion: "2.0",
      method: req.method,
      url: req.url,
      header: req.header,
      body: req.body ?? createAsyncIterable([]),
      signal: req.signal ?? new AbortController().signal,
      contextValues,
    });
    return {
      status: res.status,
      header: new Headers(res.header),
      body: res.body ?? createAsyncIterable([]),
      trailer: new Headers(res.trailer),
    };
  };
  return createTransport({
    httpClient,
    baseUrl: "http://in-process",
    useBinaryFormat: true,
    interceptors: [],
    acceptCompression: [],
    sendCompression: null,
    compressMinBytes: Number.MAX_SAFE_INTEGER,
    readMaxBytes: Number.MAX_SAFE_INTEGER,
    writeMaxBytes: Number.MAX_SAFE_INTEGER,
  });
}
