// The API's listening socket: HTTP/1.1 and h2c on one port, with what one peer may hold bounded before any request
// is authenticated: connections (in all, and per peer), header size, the time to send headers and a whole request,
// h2 streams and session memory. Connect and JSON clients speak HTTP/1.1; gRPC clients speak h2c. Node serves both on one port only
// through TLS ALPN, so plain-text connections are routed by their first bytes to an HTTP/1.1 or an HTTP/2 server.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import http2, { type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import { Duplex } from "node:stream";
import { PeerConnections } from "../net/peer-connections.js";

export interface ListenerLimits {
  readonly maxConnections: number;
  readonly maxConnectionsPerPeer: number;
  readonly maxHeaderBytes: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly h2MaxStreams: number;
  readonly h2SessionMemoryMb: number;
}

/** A request handler; `peerAddress` is the socket's remote address (an h2 request's socket is a replay stream). */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse, peerAddress: string | undefined) => void;

export interface Listener {
  readonly port: number;
  /** Stops accepting, lets requests in flight finish for up to `graceMs`, then closes every connection. */
  close(graceMs: number): Promise<void>;
}

/** How long an idle keep-alive connection (HTTP/1.1) or session (h2) stays open. */
const KEEP_ALIVE_MS = 65_000;

/** The first bytes of every HTTP/2 prior-knowledge (h2c) connection. */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0");

export async function listen(limits: ListenerLimits, port: number, host: string, serve: RequestHandler): Promise<Listener> {
  const peerOfSession = new WeakMap<Http2Session, string | undefined>();
  // Requests still being answered: a graceful close lets them finish before the database goes away.
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const handle = (req: IncomingMessage, res: ServerResponse, peerAddress: string | undefined) => {
    inFlight++;
    res.once("close", () => {
      if (--inFlight === 0) drained?.();
    });
    serve(req, res, peerAddress);
  };

  const h1 = http.createServer(
    {
      keepAliveTimeout: KEEP_ALIVE_MS,
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node answers 408 at the first check after a timeout: check often enough for the limits to hold.
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    },
    (req, res) => handle(req, res, req.socket.remoteAddress),
  );
  // Node arms headersTimeout and requestTimeout when a server starts listening. This one never listens itself (its
  // connections are handed over below), so it is told it is, which starts the same checks.
  h1.emit("listening");

  const h2 = http2.createServer({
    maxSessionMemory: limits.h2SessionMemoryMb,
    settings: { maxConcurrentStreams: limits.h2MaxStreams, maxHeaderListSize: limits.maxHeaderBytes },
  });
  const onH2Request = (req: Http2ServerRequest, res: Http2ServerResponse) => {
    if (!req.stream.endAfterHeaders) {
      // HTTP/2 has no request timeout of Node's own: a stream whose body does not arrive whole in time is reset.
      const timer = setTimeout(() => {
        if (!req.readableEnded) req.stream.close(http2.constants.NGHTTP2_CANCEL);
      }, limits.requestTimeoutMs);
      const done = () => clearTimeout(timer);
      req.once("end", done);
      req.stream.once("close", done);
    }
    handle(req as unknown as IncomingMessage, res as unknown as ServerResponse, peerOfSession.get(req.stream.session!));
  };
  h2.on("request", onH2Request);
  // An `Expect: 100-continue` request is handled like any other: its body is asked for only when it is read.
  h1.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => handle(req, res, req.socket.remoteAddress));
  h2.on("checkContinue", onH2Request);
  let connectingPeer: string | undefined;
  h2.on("session", (session) => {
    // 'session' is emitted synchronously while the h2 server takes a connection.
    peerOfSession.set(session, connectingPeer);
    // A session must complete its first request's headers as soon as an HTTP/1.1 client must; then it may idle
    // like a keep-alive connection.
    let opened = false;
    session.setTimeout(limits.headersTimeoutMs);
    session.on("timeout", () => (opened ? session.close() : session.destroy()));
    session.once("stream", () => {
      opened = true;
      session.setTimeout(KEEP_ALIVE_MS);
    });
  });

  const sockets = new Set<Socket>();
  const perPeer = new PeerConnections(limits.maxConnectionsPerPeer);
  const server = net.createServer((socket) => {
    // One peer (an address, an IPv6 /64) must not hold every connection: /healthz alone needs no key.
    const release = perPeer.admit(socket.remoteAddress);
    if (!release) return void socket.destroy();
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      release();
    });
    // A connection that sends nothing is closed like one that never finishes its headers.
    const silent = () => socket.destroy();
    socket.setTimeout(limits.headersTimeoutMs);
    socket.once("timeout", silent);
    socket.once("data", (first) => {
      socket.setTimeout(0);
      socket.off("timeout", silent);
      if (first.subarray(0, H2_PREFACE.length).equals(H2_PREFACE)) {
        // HTTP/2 reads the native handle directly, so the bytes already read must reach it through a JS stream.
        connectingPeer = socket.remoteAddress;
        h2.emit("connection", replayingStream(socket, first));
        connectingPeer = undefined;
      } else {
        socket.pause();
        socket.unshift(first);
        h1.emit("connection", socket);
        socket.resume();
      }
    });
  });
  // More connections than this are closed as they arrive, before a byte is read.
  server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((resolve) => (drained = resolve)),
          new Promise((resolve) => setTimeout(resolve, graceMs).unref()),
        ]);
      }
      for (const socket of sockets) socket.destroy();
      h1.close();
      await closed;
    },
  };
}

/** A duplex over `socket` whose readable side starts with `first`. */
function replayingStream(socket: Socket, first: Buffer): Duplex {
  const duplex = new Duplex({
    read: () => void socket.resume(),
    write: (chunk: Buffer, _enc, cb) => void socket.write(chunk, cb),
    final: (cb) => void socket.end(cb),
    destroy: (err, cb) => {
      socket.destroy(err ?? undefined);
      cb(err);
    },
  });
  duplex.push(first);
  socket.on("data", (chunk: Buffer) => {
    if (!duplex.push(chunk)) socket.pause();
  });
  socket.once("end", () => duplex.push(null));
  socket.once("close", () => duplex.destroy());
  socket.once("error", (e) => duplex.destroy(e));
  return duplex;
}
