// Request bodies at the edge, for every face: each operation's body limit comes from the contract, a body is
// refused as soon as it is declared or streamed over it (never buffered first), and an answer given before the body
// arrived whole ends the exchange, so the rest of it is never read.
import type { IncomingMessage, ServerResponse } from "node:http";
import { constants, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import { getOption, type DescMethod } from "@bufbuild/protobuf";
import { method as methodRule } from "../../gen/mailbox/v1/options_pb.js";

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

export interface BodyLimits {
  /** API_MAX_REQUEST_BYTES: the limit of every operation that carries no message content. */
  readonly maxRequestBytes: number;
  readonly messageContentBytes: number;
}

/**
 * An operation's body limit: send, reply, forward and uploads (MethodRule.carries_message_content) may carry twice the
 * message content limit, room for text and HTML of the largest message as JSON, or a file as base64 in Connect's JSON;
 * everything else is small.
 */
export function bodyLimitOf(method: DescMethod, limits: BodyLimits): number {
  return carriesMessageContent(method) ? Math.max(limits.maxRequestBytes, 2 * limits.messageContentBytes) : limits.maxRequestBytes;
}

const carries = new WeakMap<DescMethod, boolean>();

// Cached: getOption decodes the method's options on every call (2.8% of the API's CPU per request, bench:api).
function carriesMessageContent(method: DescMethod): boolean {
  let value = carries.get(method);
  if (value === undefined) carries.set(method, (value = getOption(method, methodRule).carriesMessageContent));
  return value;
}

/**
 * Whether a request has a body to read: an HTTP/1.1 request has one only with Content-Length (other than 0) or
 * Transfer-Encoding (RFC 9112 §6.3); an HTTP/2 request unless its headers ended the stream.
 */
export function declaresBody(req: NodeRequest): boolean {
  if ("stream" in req) return !req.stream.endAfterHeaders;
  return (req.headers["content-length"] ?? "0") !== "0" || req.headers["transfer-encoding"] !== undefined;
}

export interface LimitedBody extends AsyncIterable<Uint8Array> {
  /** Whether the body was refused for its size, declared or streamed. */
  readonly refused: boolean;
}

/**
 * The body of `req`, read as it is consumed and refused with `refusal()` once it is declared (Content-Length) or
 * streamed over `limit` bytes; nothing is read before the first chunk is asked for. A client that waits for
 * `100 Continue` is told to send its body only then, so a request refused before its body never sends it.
 */
export function limitedBody(req: NodeRequest, res: NodeResponse, limit: number, refusal: () => Error): LimitedBody {
  let refused = false;
  const refuse = () => {
    refused = true;
    return refusal();
  };
  return {
    get refused() {
      return refused;
    },
    async *[Symbol.asyncIterator]() {
      if (Number(req.headers["content-length"] ?? 0) > limit) throw refuse();
      if (String(req.headers.expect).toLowerCase() === "100-continue" && !res.headersSent) res.writeContinue();
      let size = 0;
      // The request must survive a refusal (destroying it would destroy the socket before the answer is written).
      for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > limit) throw refuse();
        yield chunk;
      }
    },
  };
}

/** Reads a whole body within its limit; an empty body is undefined. */
export async function readLimitedBody(body: LimitedBody): Promise<Buffer | undefined> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return chunks.length === 0 ? undefined : Buffer.concat(chunks);
}

/**
 * To be called as an answer is about to be written. When the request's body has not arrived whole (refused, or
 * answered without being read), the exchange ends with the answer, so the rest is never read: HTTP/1.1 closes the
 * connection after it (Connection: close), HTTP/2 resets the stream with NO_ERROR once it is sent (RFC 9113 §8.1).
 */
export function endWithAnswerIfBodyUnread(req: NodeRequest, res: NodeResponse): void {
  if ("stream" in req) {
    const stream = req.stream;
    if (stream.endAfterHeaders || req.readableEnded) return;
    // The compatibility response emits 'finish' only once the stream closes, which a client still sending never
    // lets happen: the stream is reset once its answer's last frame (the trailers, which the response always
    // sends) is out.
    stream.once("wantTrailers", () =>
      setImmediate(() => {
        if (!stream.closed && !stream.destroyed) stream.close(constants.NGHTTP2_NO_ERROR);
      }),
    );
    return;
  }
  if (req.complete || !declaresBody(req) || res.headersSent) return;
  (res as ServerResponse).setHeader("Connection", "close");
  res.once("finish", () => lingerThenClose(req));
}

/** How long a connection closed after an answer stays open for the client to read it. */
const LINGER_MS = 2000;

/**
 * Node closes a `Connection: close` socket as soon as the answer is written. With request bytes still arriving
 * that close is a TCP reset, which can make the client lose the answer it has not read yet (EPIPE/ECONNRESET
 * instead of the 401 or 413). So, like nginx's lingering close, the server half-closes and keeps the connection a
 * moment, reading nothing more: a client that keeps sending is held by TCP flow control and reads the answer.
 */
function lingerThenClose(req: IncomingMessage): void {
  const socket = req.socket;
  if (socket.destroyed) return;
  // Node's destroySoon() waits for the half-close to finish and then destroys: that destroy is taken back.
  socket.off("finish", socket.destroy);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once("close", () => clearTimeout(timer));
  // After Node's own handling of the finished answer, which resumes reading to discard an unread body.
  setImmediate(() => socket.pause());
}
