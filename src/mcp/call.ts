// One tool call: its arguments read as the JSON face reads a request, the RPC run in-process through the router's
// interceptors (scope, rate limit, validation, tenant scope: the same chain as every face), its answer written as
// the JSON face writes it. An error is a tool result with isError and the JSON face's {error, message} body, so a
// model can act on the code (and on retryAfterSeconds after a 429).
import { createHash } from "node:crypto";
import type { DescMethodUnary, JsonObject, JsonValue, Message } from "@bufbuild/protobuf";
import { createContextValues, type ContextValues } from "@connectrpc/connect";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Unauthenticated } from "../errors.js";
import { kFace, kPeerAddress, kPrincipal } from "../interceptors/context.js";
import type { Logger } from "../logger.js";
import { httpError, httpErrorOf, type HttpError } from "../rest/http-errors.js";
import type { UnaryInvoker } from "../rest/in-process-invoker.js";
import { readMessage, RestInputError, writeMessage } from "../rest/json.js";
import { envelopedText } from "./envelope.js";
import { MAX_DOWNLOAD_BYTES, type McpTool } from "./tools.js";

/** What the calls of one MCP request share. */
export interface CallContext {
  /** The request's context values: the peer address, and the principal once its key was accepted. */
  readonly contextValues: ContextValues;
  /** Why the request has no principal: the error its authentication threw. */
  readonly authError: unknown;
  readonly url: string;
  /** Headers the RPC layer sees (user-agent), as on the JSON face. */
  readonly header: Headers;
}

export async function callTool(
  invoke: UnaryInvoker,
  log: Logger,
  tool: McpTool,
  args: Record<string, unknown>,
  context: CallContext,
  signal: AbortSignal,
): Promise<CallToolResult> {
  let output: Message;
  try {
    const principal = context.contextValues.get(kPrincipal);
    if (!principal) throw context.authError ?? new Unauthenticated();
    const json = args as JsonObject;
    const input = readMessage<Message>(tool.route.method.input, json);
    const keyField = tool.idempotencyField;
    if (keyField && json[keyField.jsonName] === undefined && json[keyField.name] === undefined) {
      (input as unknown as Record<string, unknown>)[keyField.localName] = derivedIdempotencyKey(principal.keyId, tool, input);
    }
    // Each call has its own context values: interceptors add per-call ones (the tenant store), and one MCP request
    // may carry several calls.
    const contextValues = createContextValues()
      .set(kPeerAddress, context.contextValues.get(kPeerAddress))
      .set(kFace, context.contextValues.get(kFace))
      .set(kPrincipal, principal);
    output = await invoke(tool.route.method as DescMethodUnary, input, {
      url: context.url,
      header: new Headers(context.header),
      contextValues,
      signal,
    });
  } catch (e) {
    return errorResult(e instanceof RestInputError ? httpError(400, "invalid_request", e.message) : httpErrorOf(e));
  }
  try {
    return resultOf(tool, output);
  } catch (e) {
    log.error("mcp tool result failed", { tool: tool.name, error: e });
    return errorResult(httpErrorOf(e));
  }
}

/**
 * The idempotency key of a sending call that gave none: a hash of the API key id, the tool and the request as the
 * JSON face would write it (keys sorted), so an identical retry replays the first result instead of sending again.
 * It matches the contract's key pattern.
 */
export function derivedIdempotencyKey(keyId: string, tool: McpTool, input: Message): string {
  const json = writeMessage(tool.route.method.input, input);
  delete json[tool.idempotencyField!.jsonName];
  const hash = createHash("sha256").update(`${keyId}\n${tool.name}\n${canonicalJson(json)}`).digest("hex");
  return `mcp:${hash}`;
}

function canonicalJson(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * The JSON face's answer as structured content (a download: the whole response, the bytes in base64), and as text:
 * its JSON, or for mail from outside senders the enveloped text a model should read.
 */
function resultOf(tool: McpTool, output: Message): CallToolResult {
  const { route } = tool;
  const field = route.responseField;
  if (tool.download) {
    const size = ((output as unknown as Record<string, unknown>)[field!.localName] as Uint8Array).byteLength;
    if (size > MAX_DOWNLOAD_BYTES) {
      return errorResult(
        httpError(413, "download_too_large", `${size} bytes is more than this tool returns (${MAX_DOWNLOAD_BYTES}): download it with GET ${route.template}`),
      );
    }
  }
  const whole = writeMessage(route.method.output, output);
  const structured = field && !tool.download ? whole[field.jsonName] : whole;
  if (structured === null || typeof structured !== "object" || Array.isArray(structured)) {
    throw new Error(`${route.method.name} answered without its ${field?.name ?? "response"}`);
  }
  const text = tool.externalContent ? envelopedText(structured, { download: tool.download }) : JSON.stringify(structured);
  return { content: [{ type: "text", text }], structuredContent: structured };
}

function errorResult({ body, retryAfterSeconds }: HttpError): CallToolResult {
  const error = retryAfterSeconds > 0 ? { ...body, retryAfterSeconds } : body;
  return { isError: true, content: [{ type: "text", text: JSON.stringify(error) }] };
}
