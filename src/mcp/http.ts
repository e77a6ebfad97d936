// MCP over Streamable HTTP at /mcp, stateless: every POST is answered on its own (JSON, no session, no stream), so
// any API process answers any request. The API edge's rules hold: the key (x-api-key or Authorization: Bearer) is
// authenticated before the body is read, and the body is bounded as it streams in. A request without an accepted
// key may still initialize and list tools, with a small body; its tool calls answer the authentication error.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ContextValues } from "@connectrpc/connect";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { bodyLimitOf, limitedBody, readLimitedBody, type BodyLimits } from "../http/request-body.js";
import { kPrincipal } from "../interceptors/context.js";
import type { Logger } from "../logger.js";
import { headerValue, sendError } from "../rest/gateway.js";
import { httpError, httpErrorOf } from "../rest/http-errors.js";
import type { UnaryInvoker } from "../rest/in-process-invoker.js";
import { callTool, type CallContext } from "./call.js";
import { createMcpServer, toolList } from "./server.js";
import type { McpTool } from "./tools.js";

/** The body limit of a request without an accepted key: room for initialize and tools/list, nothing more. */
export const ANONYMOUS_BODY_BYTES = 64 * 1024;

export interface McpEndpointOptions {
  readonly tools: readonly McpTool[];
  readonly invoke: UnaryInvoker;
  /** Authenticates a request's key before its body is read and sets kPrincipal in its context values. */
  readonly authenticate: (apiKey: string | null, values: ContextValues) => Promise<void>;
  readonly limits: BodyLimits;
  /** The error a body over `limit` bytes is refused with (413 payload_too_large). */
  readonly tooLarge: (limit: number) => Error;
  readonly log: Logger;
}

export function createMcpEndpoint(options: McpEndpointOptions) {
  const { tools, limits, log } = options;
  const byName = new Map(tools.map((t) => [t.name, t]));
  const listed = toolList(tools);
  const largest = Math.max(limits.maxRequestBytes, ...tools.map((t) => bodyLimitOf(t.route.method, limits)));
  /** A body may be larger than API_MAX_REQUEST_BYTES only for one call of a tool that carries message content. */
  const limitOf = (body: unknown): number => {
    const call = body as { method?: unknown; params?: { name?: unknown } } | undefined;
    const tool = call?.method === "tools/call" ? byName.get(String(call.params?.name)) : undefined;
    return tool ? bodyLimitOf(tool.route.method, limits) : limits.maxRequestBytes;
  };

  return async function mcpEndpoint(req: IncomingMessage, res: ServerResponse, contextValues: ContextValues): Promise<void> {
    try {
      if (req.method !== "POST") {
        res.setHeader("Allow", "POST");
        return sendError(res, httpError(405, "method_not_allowed", "this MCP endpoint is stateless: POST each JSON-RPC message"));
      }
      const authError = await options.authenticate(apiKeyOf(req), contextValues).then(
        () => undefined,
        (e: unknown) => e,
      );
      const limit = contextValues.get(kPrincipal) ? largest : Math.min(ANONYMOUS_BODY_BYTES, limits.maxRequestBytes);
      const bytes = (await readLimitedBody(limitedBody(req, res, limit, () => options.tooLarge(limit)))) ?? Buffer.alloc(0);
      const body = parseJson(bytes);
      if (bytes.length > limitOf(body)) throw options.tooLarge(limitOf(body));

      const context: CallContext = {
        contextValues,
        authError,
        url: `http://mcp${req.url ?? "/mcp"}`,
        header: new Headers(req.headers["user-agent"] ? { "user-agent": headerValue(req, "user-agent")! } : {}),
      };
      const server = createMcpServer(byName, listed, (tool, args, signal) => callTool(options.invoke, log, tool, args, context, signal));
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      // A client that leaves before its answer aborts its calls (closing the server aborts their signals).
      res.once("close", () => {
        if (!res.writableFinished) void server.close();
      });
      try {
        await server.connect(transport);
        // An unparsable body goes to the transport as bytes, which answers it with a JSON-RPC parse error.
        const request = new Request(context.url, { method: "POST", headers: forwardedHeaders(req), body: body === undefined ? bytes : null });
        await writeAnswer(res, await transport.handleRequest(request, body === undefined ? {} : { parsedBody: body }));
      } finally {
        await server.close();
      }
    } catch (e) {
      sendError(res, httpErrorOf(e));
    }
  };
}

/** The key of x-api-key, else of Authorization: Bearer (what MCP hosts can usually configure). */
function apiKeyOf(req: IncomingMessage): string | null {
  const key = headerValue(req, "x-api-key");
  if (key !== undefined) return key;
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(headerValue(req, "authorization") ?? "");
  return bearer ? bearer[1]! : null;
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

// The transport reads Accept, Content-Type and MCP-Protocol-Version; the key stays here, and HTTP/2 pseudo-headers
// are not headers.
function forwardedHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":") || name === "x-api-key" || name === "authorization") continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  return headers;
}

async function writeAnswer(res: ServerResponse, answer: Response): Promise<void> {
  const body = Buffer.from(await answer.arrayBuffer());
  const headers: Record<string, string> = { "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" };
  // Hop-by-hop headers belong to the connection (and are invalid on HTTP/2).
  answer.headers.forEach((value, name) => {
    if (!["connection", "keep-alive", "transfer-encoding"].includes(name)) headers[name] = value;
  });
  headers["Content-Length"] = String(body.length);
  res.writeHead(answer.status, headers);
  res.end(body);
}
