// Raw clients of the API's four faces for edge tests: requests whose body is declared but never sent, or streamed
// lazily until the server answers or closes (never more than asked), with the answer decoded in each face's own
// protocol down to our ErrorDetail code.
import http from "node:http";
import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { errorFromJsonBytes } from "@connectrpc/connect/protocol-connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerParse } from "@connectrpc/connect/protocol-grpc-web";
import { ErrorDetailSchema } from "../../gen/mailbox/v1/errors_pb.js";

export type Face = "rest" | "connect" | "grpc-web" | "grpc";
export const FACES: readonly Face[] = ["rest", "connect", "grpc-web", "grpc"];

/** A POST operation as each face addresses it. */
export interface Operation {
  readonly rest: string;
  /** /package.Service/Method */
  readonly rpc: string;
}
export const GET_ME: Operation = { rest: "/v1/me", rpc: "/mailbox.v1.AccountService/GetMe" };
export const CREATE_INBOX: Operation = { rest: "/v1/inboxes", rpc: "/mailbox.v1.InboxService/CreateInbox" };
/** An operation with the larger body limit of message content. */
export const SEND_EMAIL: Operation = { rest: "/v1/send", rpc: "/mailbox.v1.DeliveryService/SendEmail" };

export interface Exchange {
  readonly face: Face;
  readonly operation: Operation;
  readonly key?: string;
  /** Sent as Content-Length; no body byte is sent. */
  readonly declaredLength?: number;
  /** Streamed in 64 KiB chunks (chunked on HTTP/1.1) until the answer comes or the server closes. */
  readonly streamBytes?: number;
  readonly expectContinue?: boolean;
  readonly signal?: AbortSignal;
}

export interface Answer {
  /** HTTP status; undefined when the server closed without one. */
  readonly status: number | undefined;
  /** {error} of the JSON face, or the ErrorDetail code of an RPC face's error. */
  readonly errorCode?: string;
  /** The Connect code of an RPC face's error. */
  readonly code?: Code;
  readonly retryAfter: string | undefined;
  /** Body bytes the client wrote before it stopped. */
  readonly sentBytes: number;
  /** HTTP/1.1: the answer said Connection: close; h2: the server closed the stream before the client's body ended. */
  readonly endedByServer: boolean;
  /** The server sent 100 Continue. */
  readonly continued: boolean;
  /** What went wrong on the client side, if the exchange ended without an answer. */
  readonly failure?: string;
}

const CHUNK = 64 * 1024;
const ANSWER_LIMIT = 1024 * 1024;

function contentType(face: Face): string {
  return { rest: "application/json", connect: "application/json", "grpc-web": "application/grpc-web+proto", grpc: "application/grpc" }[face];
}

/** The body: JSON-ish filler, or for the gRPC faces one envelope announcing a huge message, then filler. */
function chunkAt(face: Face, index: number): Buffer {
  const chunk = Buffer.alloc(CHUNK, 0x20);
  if (index === 0 && (face === "grpc" || face === "grpc-web")) chunk.set([0, 0x7f, 0xff, 0xff, 0xff]);
  return chunk;
}

export function exchange(url: string, ex: Exchange): Promise<Answer> {
  return ex.face === "grpc" ? h2Exchange(url, ex) : h1Exchange(url, ex);
}

function headersOf(ex: Exchange): Record<string, string> {
  const headers: Record<string, string> = { "content-type": contentType(ex.face) };
  if (ex.key !== undefined) headers["x-api-key"] = ex.key;
  if (ex.declaredLength !== undefined) headers["content-length"] = String(ex.declaredLength);
  if (ex.expectContinue) headers.expect = "100-continue";
  if (ex.face === "connect") headers["connect-protocol-version"] = "1";
  if (ex.face === "grpc") headers.te = "trailers";
  return headers;
}

function h1Exchange(url: string, ex: Exchange): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    let sent = 0;
    let done = false;
    let continued = false;
    const req = http.request({
      host: hostname,
      port,
      path: ex.face === "rest" ? ex.operation.rest : ex.operation.rpc,
      method: "POST",
      headers: headersOf(ex),
      agent: false,
    });
    const finish = (answer: Omit<Answer, "sentBytes" | "continued">) => {
      if (done) return;
      done = true;
      req.destroy();
      resolve({ ...answer, sentBytes: sent, continued });
    };
    const noAnswer = (failure: string) =>
      finish({ status: undefined, retryAfter: undefined, endedByServer: true, failure });
    ex.signal?.addEventListener("abort", () => noAnswer("aborted"));
    req.on("continue", () => {
      continued = true;
      pump();
    });
    req.on("error", (e: NodeJS.ErrnoException) => noAnswer(e.code ?? e.message));
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size <= ANSWER_LIMIT) chunks.push(c);
      });
      res.on("error", () => undefined);
      res.on("end", () => {
        const body = Buffer.concat(chunks);
        finish({
          status: res.statusCode,
          ...decodeH1(ex.face, res.statusCode!, res.headers, body),
          retryAfter: res.headers["retry-after"],
          endedByServer: res.headers.connection === "close",
        });
      });
    });
    const pump = () => {
      if (ex.streamBytes === undefined) return;
      while (!done && sent < ex.streamBytes) {
        sent += CHUNK;
        if (!req.write(chunkAt(ex.face, sent / CHUNK - 1))) return void req.once("drain", pump);
      }
      if (!done) req.end();
    };
    if (ex.declaredLength !== undefined) req.flushHeaders();
    else if (ex.streamBytes === undefined) req.end();
    else if (ex.expectContinue) req.flushHeaders();
    else pump();
  });
}

function decodeH1(face: Face, status: number, headers: http.IncomingHttpHeaders, body: Buffer): { errorCode?: string; code?: Code } {
  if (face === "rest") {
    try {
      return { errorCode: (JSON.parse(body.toString("utf8")) as { error?: string }).error };
    } catch {
      return {};
    }
  }
  if (face === "connect") {
    if (status === 200) return {};
    return describe(errorFromJsonBytes(body, undefined, new ConnectError(`HTTP ${status}`, Code.Unknown)));
  }
  // gRPC-Web: the status is in the headers (trailers-only) or in a trailer frame at the end of the body.
  let trailer = new Headers();
  for (const [name, value] of Object.entries(headers)) if (typeof value === "string") trailer.set(name, value);
  for (let at = 0; at + 5 <= body.length; ) {
    const length = body.readUInt32BE(at + 1);
    if (body[at]! & trailerFlag) trailer = trailerParse(body.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return describe(findTrailerError(trailer));
}

function describe(err: ConnectError | undefined): { errorCode?: string; code?: Code } {
  if (!err) return {};
  return { code: err.code, errorCode: err.findDetails(ErrorDetailSchema)[0]?.code };
}

function h2Exchange(url: string, ex: Exchange): Promise<Answer> {
  return new Promise((resolve) => {
    const session = http2.connect(url);
    session.on("error", () => undefined);
    let sent = 0;
    let done = false;
    let status: number | undefined;
    let responseHeaders: http2.IncomingHttpHeaders = {};
    const stream = session.request({ ":method": "POST", ":path": ex.operation.rpc, ...headersOf(ex) }, { endStream: false });
    const finish = (trailers: http2.IncomingHttpHeaders | undefined, failure?: string) => {
      if (done) return;
      done = true;
      const all = new Headers();
      for (const h of [responseHeaders, trailers ?? {}]) {
        for (const [name, value] of Object.entries(h)) if (typeof value === "string" && !name.startsWith(":")) all.set(name, value);
      }
      const err = findTrailerError(all);
      const endedByServer = aborted || (stream.rstCode !== undefined && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR);
      resolve({
        status,
        ...describe(err),
        retryAfter: all.get("retry-after") ?? undefined,
        sentBytes: sent,
        endedByServer,
        continued: false,
        ...(status === undefined ? { failure: failure ?? `stream closed (${stream.rstCode})` } : {}),
      });
      session.destroy();
    };
    ex.signal?.addEventListener("abort", () => finish(undefined, "aborted"));
    // Node emits 'aborted' when a stream closes while its writable side is still open: the server ended it.
    let aborted = false;
    stream.on("aborted", () => (aborted = true));
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      responseHeaders = h;
    });
    let trailers: http2.IncomingHttpHeaders | undefined;
    stream.on("trailers", (t) => (trailers = t));
    stream.on("error", (e: NodeJS.ErrnoException) => finish(trailers, e.code));
    stream.on("close", () => finish(trailers));
    stream.resume();
    const pump = () => {
      if (ex.streamBytes === undefined) return;
      while (!done && sent < ex.streamBytes) {
        sent += CHUNK;
        if (!stream.write(chunkAt(ex.face, sent / CHUNK - 1))) return void stream.once("drain", pump);
      }
      if (!done) stream.end();
    };
    if (ex.declaredLength === undefined && ex.streamBytes === undefined) stream.end();
    else pump();
  });
}
