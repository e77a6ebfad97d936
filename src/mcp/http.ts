// MCP over Streamable HTTP at /mcp, stateless: every POST is answered on its own (JSON, no session, no stream), so
// any API process answers any request. The API edge's rules hold: the key (x-api-key or Authorization: Bearer) is
// authenticated before the body is read, and the body is bounded as it streams in: API_MAX_REQUEST_BYTES, or the
// limit of message content for a key that may send (its scope is known before the body), and then only for a call
// of a sending tool. A request without an accepted key may still initialize and list tools, with a small body; its
// tool calls answer the authentication error. One message per request: JSON-RPC batches (which MCP 2025-06-18
// removed) are refused, and tools/list is answered from one serialised copy, so no request costs more than one.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ContextValues } from "@connectrpc/connect";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isJSONRPCRequest, SUPPORTED_PROTOCOL_VERSIONS, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { hasScope } from "../auth/principal.js";
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
  const toolsListed = serialisedToolList(tools);
  const sending = tools.filter((t) => bodyLimitOf(t.route.method, limits) > limits.maxRequestBytes);
  const largest = Math.max(limits.maxRequestBytes, ...sending.map((t) => bodyLimitOf(t.route.method, limits)));
  /** Known before the body: only a key that may call a sending tool may send more than API_MAX_REQUEST_BYTES. */
  const limitFor = (contextValues: ContextValues): number => {
    const principal = contextValues.get(kPrincipal);
    if (!principal) return Math.min(ANONYMOUS_BODY_BYTES, limits.maxRequestBytes);
    return sending.some((t) => hasScope(principal, t.route.scope)) ? largest : limits.maxRequestBytes;
  };
  /** And once the body is read: more than API_MAX_REQUEST_BYTES only for one call of a tool that carries message content. */
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
      const limit = limitFor(contextValues);
      const bytes = (await readLimitedBody(limitedBody(req, res, limit, () => options.tooLarge(limit)))) ?? Buffer.alloc(0);
      const body = parseJson(bytes);
      if (bytes.length > limitOf(body)) throw options.tooLarge(limitOf(body));
      if (Array.isArray(body)) {
        return writeJson(res, 400, jsonRpcError(-32600, "Invalid Request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them): send one message per request"));
      }
      if (isJSONRPCRequest(body) && body.method === "tools/list" && transportAccepts(req)) return writeJson(res, 200, toolsListed(body.id));

      const context: CallContext = {
        contextValues,
        authError,
        url: `http://mcp${req.url ?? "/mcp"}`,
        header: new Headers(req.headers["user-agent"] ? { "user-agent": headerValue(req, "user-agent")! } : {}),
      };
      const server = createMcpServer(byName, (tool, args, signal) => callTool(options.invoke, log, tool, args, context, signal));
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

/**
 * tools/list's answer for a request id, as the SDK's transport writes it, from one serialised copy of the list
 * (118 KB of schemas, 1.2 ms of JSON.stringify each time otherwise).
 */
function serialisedToolList(tools: readonly McpTool[]): (id: RequestId) => Buffer {
  const head = Buffer.from(`{"result":${JSON.stringify({ tools: toolList(tools) })},"jsonrpc":"2.0","id":`);
  const tail = Buffer.from("}");
  return (id) => Buffer.concat([head, Buffer.from(JSON.stringify(id)), tail]);
}

/**
 * What the SDK's transport checks before it dispatches a request (Streamable HTTP: Accept both media types, a JSON
 * body, a supported MCP-Protocol-Version when one is given); a request that fails them is left to it to answer.
 */
function transportAccepts(req: IncomingMessage): boolean {
  const accept = headerValue(req, "accept") ?? "";
  const version = headerValue(req, "mcp-protocol-version");
  return (
    accept.includes("application/json") &&
    accept.includes("text/event-stream") &&
    /^application\/json\s*(;|$)/i.test(headerValue(req, "content-type") ?? "") &&
    (version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version))
  );
}

function jsonRpcError(code: number, message: string): Buffer {
  return Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } }));
}

function writeJson(res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": String(body.length), "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" });
  res.end(body);
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
