// The API server: one HTTP port serving Connect, gRPC and gRPC-Web (HTTP/1.1 and h2c), the JSON /v1 face and MCP
// at /mcp, all through one router and one interceptor chain. Before any of it, each face authenticates a request
// and bounds its body by the same functions (see src/http/request-body.ts and authenticateRequest).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { DescMethod } from "@bufbuild/protobuf";
import { createConnectRouter, createContextValues, type Interceptor } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { Authenticator } from "./auth/authenticator.js";
import type { Config } from "./config.js";
import type { Database } from "./db/database.js";
import { TooLarge } from "./errors.js";
import { listen, type RequestHandler } from "./http/listener.js";
import { bodyLimitOf, endWithAnswerIfBodyUnread, limitedBody, type NodeRequest, type NodeResponse } from "./http/request-body.js";
import { authenticate, authenticateRequest } from "./interceptors/authenticate.js";
import { kFace, kPeerAddress } from "./interceptors/context.js";
import { errorBoundary, toConnectError } from "./interceptors/error-boundary.js";
import { observeCalls, observeGate, routerFaceOf } from "./interceptors/metrics.js";
import { rateLimit } from "./interceptors/rate-limit.js";
import { unitOfWork } from "./interceptors/unit-of-work.js";
import { validateRequests } from "./interceptors/validate.js";
import type { Logger } from "./logger.js";
import { createMcpEndpoint } from "./mcp/http.js";
import { buildLlmsTxt } from "./mcp/llms-txt.js";
import { buildTools } from "./mcp/tools.js";
import { createStatusHandler, type StatusDeps } from "./metrics/status.js";
import { createRestGateway } from "./rest/gateway.js";
import { createInProcessInvoker, createInProcessStreamInvoker } from "./rest/in-process-invoker.js";
import { buildOpenApi } from "./rest/openapi.js";
import { buildRouteTable } from "./rest/routes.js";
import { CONTRACT_SERVICES, createServiceSpecs, type ServiceDeps } from "./rpc/services.js";
import { configuredUploadDeps } from "./uploads/uploads.js";

export interface ApiServerDeps extends ServiceDeps {
  readonly config: Config;
  readonly db: Database;
  readonly authenticator: Authenticator;
  readonly log: Logger;
  /** Metrics (API calls are recorded in the chain) and what /healthz, /readyz and /metrics answer. */
  readonly status: StatusDeps;
}

export interface ApiServer {
  readonly port: number;
  /** Stops accepting and lets requests in flight finish for up to `graceMs` (10 s by default). */
  close(graceMs?: number): Promise<void>;
}

/**
 * The interceptor chain, outermost first: every call is timed and counted as it is answered; errors are mapped at
 * one boundary; the principal the request was authenticated as (before its body) must hold the method's scope
 * before the call counts against the key's rate; input is validated before a database session opens.
 */
function interceptorsOf(deps: ApiServerDeps): Interceptor[] {
  const { metrics } = deps.status;
  return [observeCalls(metrics.api), errorBoundary(deps.log), authenticate(), rateLimit(deps.db), validateRequests(), unitOfWork(deps.db)];
}

export function createApiHandler(deps: ApiServerDeps): RequestHandler {
  const interceptors = interceptorsOf(deps);
  const authenticateBeforeBody = observeGate(authenticateRequest(deps.authenticator, deps.log), deps.status.metrics.api);
  const status = createStatusHandler(deps.status, "api");
  const specs = createServiceSpecs({ ...deps, uploads: deps.uploads ?? configuredUploadDeps(deps.config, deps.log) });
  const router = createConnectRouter({
    interceptors,
    // Connect runs the gate once a request's headers are in, before it reads the body.
    requestGate: (context) => authenticateBeforeBody(context.requestHeader.get("x-api-key"), context.values, context.method),
  });
  for (const spec of specs) for (const m of Object.values(spec.methods)) router.rpc(m.method, m.impl as never);
  const handlers = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
  const limits = { maxRequestBytes: deps.config.api.maxRequestBytes, messageContentBytes: deps.config.platformLimits.messageContentBytes };
  const tooLarge = (limit: number, label: string) =>
    toConnectError(new TooLarge("payload_too_large", `the request body exceeds ${limit} bytes`), deps.log, label);
  const bodyOf = (req: NodeRequest, res: NodeResponse, method: DescMethod) => {
    const limit = bodyLimitOf(method, limits);
    return limitedBody(req, res, limit, () => tooLarge(limit, method.name));
  };
  const routes = buildRouteTable(CONTRACT_SERVICES);
  const invoke = createInProcessInvoker(specs, interceptors);
  let openApi: unknown;
  const gateway = createRestGateway({
    routes,
    invoke,
    invokeStream: createInProcessStreamInvoker(specs, interceptors),
    authenticate: authenticateBeforeBody,
    bodyOf,
    documents: { "/openapi.json": () => (openApi ??= buildOpenApi(routes)) },
  });
  const tools = buildTools(routes);
  const mcp = createMcpEndpoint({
    tools,
    invoke,
    authenticate: (apiKey, values) => authenticateBeforeBody(apiKey, values, undefined),
    limits,
    tooLarge: (limit) => tooLarge(limit, "mcp"),
    log: deps.log,
  });
  const llmsTxt = buildLlmsTxt(tools, {
    limits,
    defaultRequestsPerMinute: deps.config.defaults.requestsPerMinute,
    streams: routes.filter((r) => r.stream),
  });

  return (req, res, peerAddress) => {
    // Probes and scrapes: before the pipeline, so they need no key, read no body and count against no rate.
    if (status(req, res)) return;
    const contextValues = createContextValues().set(kPeerAddress, peerAddress);
    const path = (req.url ?? "").split("?", 1)[0]!;
    if (path === "/mcp") {
      void mcp(req, res, contextValues.set(kFace, "mcp"));
      return;
    }
    if (path === "/llms.txt" && (req.method === "GET" || req.method === "HEAD")) {
      sendText(req, res, llmsTxt);
      return;
    }
    const handler = handlers.get(path);
    if (!handler) {
      void gateway(req, res, contextValues.set(kFace, "json"));
      return;
    }
    contextValues.set(kFace, routerFaceOf(req.headers["content-type"]));
    const body = bodyOf(req, res, handler.method);
    Promise.resolve()
      .then(() => handler({ ...universalRequestFromNodeRequest(req, res, undefined, contextValues), body }))
      .then((answer) => {
        endWithAnswerIfBodyUnread(req, res);
        // Connect's protocol answers resource_exhausted with 429; a refused body is 413 (gRPC and gRPC-Web answer
        // 200 and carry the code in trailers).
        return universalResponseToNodeResponse(body.refused && answer.status === 429 ? { ...answer, status: 413 } : answer, res);
      })
      .catch((e: unknown) => {
        deps.log.warn("rpc response failed", { path: req.url, error: e });
        // Connect refuses a request it cannot read as one (an HTTP/1.0 request without Host).
        if (res.headersSent || "stream" in req) res.destroy();
        else res.writeHead(400, { Connection: "close" }).end();
      });
  };
}

function sendText(req: IncomingMessage, res: ServerResponse, text: string): void {
  endWithAnswerIfBodyUnread(req, res);
  res.writeHead(200, {
    "Content-Type": "text/markdown; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(text)),
    "X-Content-Type-Options": "nosniff",
  });
  if (req.method === "HEAD") res.end();
  else res.end(text);
}

/** How long a closing server waits for requests in flight. */
const CLOSE_GRACE_MS = 10_000;

export async function startApiServer(deps: ApiServerDeps, port: number, host: string): Promise<ApiServer> {
  const listener = await listen(deps.config.api, port, host, createApiHandler(deps));
  return { port: listener.port, close: (graceMs = CLOSE_GRACE_MS) => listener.close(graceMs) };
}
