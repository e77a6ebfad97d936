// The generic /v1 gateway: matches a request against the route table read from the contract, binds path, query,
// headers and body into the request message (a JSON body, or the raw bytes and Content-Type of a route whose body is
// a google.api.HttpBody), and calls the router's implementations and interceptors in-process. A
// server-streaming RPC is answered as Server-Sent Events (text/event-stream). Nothing here knows any particular
// endpoint.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { JsonValue } from "@bufbuild/protobuf";
import { ScalarType, type DescMethod, type DescMethodServerStreaming, type DescMethodUnary, type Message } from "@bufbuild/protobuf";
import type { ContextValues } from "@connectrpc/connect";
import { declaresBody, endWithAnswerIfBodyUnread, readLimitedBody, type LimitedBody } from "../http/request-body.js";
import type { AuthenticateRequest } from "../interceptors/authenticate.js";
import { httpError, httpErrorOf, type HttpError } from "./http-errors.js";
import type { StreamInvoker, UnaryInvoker } from "./in-process-invoker.js";
import { readRequest, RestInputError, writeMessage } from "./json.js";
import { matchRoute, type Route } from "./routes.js";

/**
 * Request headers forwarded to the RPC layer; everything else the JSON face binds into the message itself (the
 * key is read before the body, by `authenticate`).
 */
const FORWARDED_HEADERS = ["user-agent"];

export interface RestGatewayOptions {
  readonly routes: readonly Route[];
  /** Runs an RPC through the router's interceptors and implementations, in-process. */
  readonly invoke: UnaryInvoker;
  /** Runs a server-streaming RPC the same way. */
  readonly invokeStream: StreamInvoker;
  /** Authenticates a request before its body is read: the Connect router's request gate. */
  readonly authenticate: AuthenticateRequest;
  /** The request's body, refused over its operation's limit as it streams in. */
  readonly bodyOf: (req: IncomingMessage, res: ServerResponse, method: DescMethod) => LimitedBody;
  /** Other documents served beside /v1, such as /openapi.json. */
  readonly documents: Readonly<Record<string, () => unknown>>;
}

export function createRestGateway(options: RestGatewayOptions) {
  const { routes, invoke } = options;

  /** `contextValues` carry the caller's socket address; authentication adds the principal. */
  return async function restGateway(req: IncomingMessage, res: ServerResponse, contextValues: ContextValues): Promise<void> {
    try {
      const url = new URL(req.url ?? "/", "http://gateway");
      const document = options.documents[url.pathname];
      if (document && req.method === "GET") return sendJson(res, 200, document());
      const found = matchRoute(routes, req.method ?? "GET", url.pathname);
      if ("allowed" in found) {
        if (found.allowed.length === 0) return sendError(res, httpError(404, "not_found", "no such route"));
        res.setHeader("Allow", found.allowed.join(", "));
        return sendError(res, httpError(405, "method_not_allowed", `use ${found.allowed.join(" or ")}`));
      }
      const { route, params } = found.match;
      await options.authenticate(headerValue(req, "x-api-key") ?? null, contextValues, route.method);
      // Most calls are GETs without a body: reading one that was never declared would cost an async iteration each.
      const bytes = declaresBody(req) ? await readLimitedBody(options.bodyOf(req, res, route.method)) : undefined;
      const raw = route.rawBodyField !== undefined;
      const input = readRequest<Message>(route, {
        params,
        query: url.searchParams,
        headers: (name) => headerValue(req, name),
        body: raw ? undefined : jsonBodyOf(req, bytes),
        ...(raw ? { rawBody: { contentType: headerValue(req, "content-type") ?? "", data: bytes ?? new Uint8Array() } } : {}),
      });
      const header = new Headers();
      for (const name of FORWARDED_HEADERS) {
        const value = headerValue(req, name);
        if (value !== undefined) header.set(name, value);
      }
      const abort = new AbortController();
      // Abort only a call whose client left before the answer: an abort per request costs a DOMException each.
      res.once("close", () => {
        if (!res.writableFinished) abort.abort();
      });
      const call = { url: url.href, header, contextValues, signal: abort.signal };
      if (route.stream) return await sendEvents(res, route, options.invokeStream(route.method as DescMethodServerStreaming, input, call));
      const output = await invoke(route.method as DescMethodUnary, input, call);
      sendSuccess(res, route, output);
    } catch (e) {
      if (e instanceof URIError) return sendError(res, httpError(400, "invalid_request", "malformed percent-encoding in the path"));
      if (e instanceof RestInputError) return sendError(res, httpError(400, "invalid_request", e.message));
      if (e instanceof BodyError) return sendError(res, e.httpError);
      sendError(res, httpErrorOf(e));
    }
  };
}

function sendSuccess(res: ServerResponse, route: Route, message: Message): void {
  const fields = message as unknown as Record<string, unknown>;
  const replayed = route.replayStatusField && fields[route.replayStatusField.localName] === true;
  const status = replayed ? 200 : route.successStatus;
  if (status === 204) {
    endWithAnswerIfBodyUnread(res.req, res);
    res.writeHead(204, { "Cache-Control": "no-store" });
    res.end();
    return;
  }
  const field = route.responseField;
  if (field === undefined) return sendJson(res, status, writeMessage(route.method.output, message));
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.BYTES) {
    const filename = route.downloadFilenameField ? String(fields[route.downloadFilenameField.localName]) : "download";
    return sendBytes(res, status, fields[field.localName] as Uint8Array, filename);
  }
  const whole = writeMessage(route.method.output, message);
  sendJson(res, status, whole[field.jsonName] ?? null);
}

/**
 * A server stream as Server-Sent Events. The answer waits for the first message, which the implementation sends
 * once its checks passed, so a refusal before it is an ordinary error answer with its status. Each message is then
 * one event: `id:` its event id field, `data:` the JSON of the route's response (field); a message without that field
 * is a keep-alive comment. A message is read only once the previous one was written out, so a slow client is never
 * buffered for; an error after the first is an `error` event with the {error, message} body, and the end.
 */
async function sendEvents(res: ServerResponse, route: Route, messages: AsyncIterable<Message>): Promise<void> {
  const iterator = messages[Symbol.asyncIterator]();
  try {
    let next = await iterator.next();
    endWithAnswerIfBodyUnread(res.req, res);
    res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
      // Proxies that buffer responses (nginx) pass this one through as it comes.
      "X-Accel-Buffering": "no",
    });
    try {
      while (!next.done) {
        if (!(await write(res, serverSentEvent(route, next.value)))) return;
        next = await iterator.next();
      }
    } catch (e) {
      await write(res, `event: error\ndata: ${JSON.stringify(httpErrorOf(e).body)}\n\n`);
    }
    res.end();
  } finally {
    // The client left (or the stream failed): the implementation ends and lets go of what it holds.
    await iterator.return?.();
  }
}

function serverSentEvent(route: Route, message: Message): string {
  const field = route.responseField;
  const event = field ? ((message as unknown as Record<string, unknown>)[field.localName] as Message | undefined) : message;
  if (event === undefined) return ": keep-alive\n\n";
  const json = field?.fieldKind === "message" ? writeMessage(field.message, event) : writeMessage(route.method.output, event);
  const idField = route.stream?.eventIdField;
  const id = idField ? String((event as unknown as Record<string, unknown>)[idField.localName]).replace(/[\r\n]/g, "") : "";
  return `${id === "" ? "" : `id: ${id}\n`}data: ${JSON.stringify(json)}\n\n`;
}

/** Writes a chunk; resolves once it may be followed (drained), false when the client is gone. */
function write(res: ServerResponse, chunk: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  if (res.write(chunk)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off("drain", drained).off("close", closed);
      resolve(ok);
    };
    const drained = () => done(true);
    const closed = () => done(false);
    res.once("drain", drained).once("close", closed);
  });
}

function sendBytes(res: ServerResponse, status: number, bytes: Uint8Array, filename: string): void {
  endWithAnswerIfBodyUnread(res.req, res);
  res.writeHead(status, {
    "Content-Type": "application/octet-stream",
    "Content-Length": String(bytes.byteLength),
    "Content-Disposition": contentDisposition(filename),
    "Cache-Control": "private, no-store",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "X-Content-Type-Options": "nosniff",
  });
  res.end(bytes);
}

/**
 * An attachment disposition with an ASCII fallback and the exact name in RFC 5987 form. The name is untrusted
 * display metadata: quotes, backslashes, separators and control characters never reach the header.
 */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\;%]/g, "_").trim() || "download";
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  endWithAnswerIfBodyUnread(res.req, res);
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(text)),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
  });
  res.end(text);
}

/** Answers with the JSON face's {error, message} body and status (and Retry-After). */
export function sendError(res: ServerResponse, error: HttpError): void {
  if (res.headersSent) return void res.destroy();
  if (error.retryAfterSeconds > 0) res.setHeader("Retry-After", String(error.retryAfterSeconds));
  sendJson(res, error.status, error.body);
}

export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
}

class BodyError extends Error {
  constructor(readonly httpError: HttpError) {
    super(httpError.body.message);
  }
}

/** Parses a JSON body read within its limit; no body at all is undefined. */
function jsonBodyOf(req: IncomingMessage, bytes: Buffer | undefined): JsonValue | undefined {
  if (bytes === undefined) return undefined;
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new BodyError(httpError(415, "unsupported_media_type", "the request body must be application/json"));
  }
  try {
    return JSON.parse(bytes.toString("utf8")) as JsonValue;
  } catch {
    throw new BodyError(httpError(400, "invalid_json", "the request body is not valid JSON"));
  }
}
