// `mailbox mcp`: MCP over stdio for hosts that start a local command, relayed message by message to a service's
// /mcp endpoint. The tools, their schemas, the derived idempotency keys and the errors all stay in the service, so
// the bridge serves exactly the tools of the service it is pointed at, whatever version this CLI is, and a call
// runs through the same authentication, edge limits and interceptors as any other. The key travels in a header of
// every request, so the service is reached over https, or over http only on this machine.
import { isIPv4 } from "node:net";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  ErrorCode,
  isInitializeRequest,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { ConfigError } from "../config.js";

export interface StdioBridgeOptions {
  /** The service's base URL; the bridge speaks to <url>/mcp. */
  readonly url: string;
  /** The key sent with every request; without one, tool calls answer the authentication error. */
  readonly apiKey: string | undefined;
  readonly input?: NodeJS.ReadableStream & { on(event: "end" | "close", listener: () => void): unknown };
  readonly output?: NodeJS.WritableStream;
  /** Where transport problems are told (never stdout, which carries the protocol). */
  readonly warn: (message: string) => void;
}

/** Relays until stdin ends and the requests read before it are answered. */
export async function runStdioBridge(options: StdioBridgeOptions): Promise<void> {
  refuseClearText(options.url);
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const remote = new StreamableHTTPClientTransport(new URL("/mcp", options.url), {
    requestInit: { headers: options.apiKey ? { "x-api-key": options.apiKey } : {} },
  });
  const local = new StdioServerTransport(input as typeof process.stdin, output as typeof process.stdout);
  const initializing = new Set<RequestId>();
  const inFlight = new Set<Promise<void>>();

  local.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCRequest(message) && isInitializeRequest(message)) initializing.add(message.id);
    const sent = remote.send(message).catch((e: unknown) => {
      // A request must be answered, or the host waits for ever.
      if (!isJSONRPCRequest(message)) return options.warn(`mcp: ${describe(e)}`);
      void local.send({
        jsonrpc: "2.0",
        id: message.id,
        error: { code: ErrorCode.InternalError, message: `the mailbox service at ${options.url} did not answer: ${describe(e)}` },
      });
    });
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
  };
  remote.onmessage = (message) => {
    // Later requests carry the negotiated version in MCP-Protocol-Version, as the SDK's own client sends it.
    if (isJSONRPCResultResponse(message) && initializing.delete(message.id)) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === "string") remote.setProtocolVersion(version);
    }
    void local.send(message);
  };
  remote.onerror = (e) => options.warn(`mcp: ${describe(e)}`);

  const ended = new Promise<void>((resolve) => {
    input.on("end", resolve);
    input.on("close", resolve);
  });
  await remote.start();
  await local.start();
  await ended;
  // Requests read before stdin ended are still answered (the HTTP answer is relayed before send() settles).
  await Promise.allSettled([...inFlight]);
  // And written out whole before the process exits: an answer larger than the pipe's buffer (tools/list) is still
  // queued in stdout when its send returns, and exiting would cut it off.
  await new Promise<void>((resolve) => output.write("", () => resolve()));
  await Promise.all([local.close(), remote.close()]);
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** http:// only to a loopback host (localhost, 127.0.0.0/8, ::1): anywhere else the key would cross a network in clear text. */
export function refuseClearText(url: string): void {
  const { protocol, hostname } = new URL(url);
  const loopback = hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" || (isIPv4(hostname) && hostname.startsWith("127."));
  if (protocol === "http:" && !loopback) {
    throw new ConfigError(`MAILBOX_URL must be https:// (http:// only to this machine: localhost, 127.0.0.1, [::1]): the API key would travel in clear text to ${hostname}`);
  }
}
