// The API server: one HTTP port serving Connect, gRPC and gRPC-Web (HTTP/1.1 and h2c) plus the JSON /v1 face,
// all through one router and one interceptor chain.
import http from "node:http";
import http2, { type Http2ServerRequest, type Http2Session } from "node:http2";
import { Duplex } from "node:stream";
import net, { type AddressInfo, type Socket } from "node:net";
import { createConnectRouter, createContextValues, type Interceptor } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Authenticator } from "./auth/authenticator.js";
import type { Config } from "./config.js";
import type { Database } from "./db/database.js";
import { authenticate } from "./interceptors/authenticate.js";
import { kPeerAddress } from "./interceptors/context.js";
import { errorBoundary } from "./interceptors/error-boundary.js";
import { rateLimit } from "./interceptors/rate-limit.js";
import { unitOfWork } from "./interceptors/unit-of-work.js";
import { validateRequests } from "./interceptors/validate.js";
import type { Logger } from "./logger.js";
import { createRestGateway } from "./rest/gateway.js";
import { createInProcessInvoker } from "./rest/in-process-invoker.js";
import { buildOpenApi } from "./rest/openapi.js";
import { buildRouteTable } from "./rest/routes.js";
import { CONTRACT_SERVICES, createServiceSpecs, type ServiceDeps } from "./rpc/services.js";

export interface ApiServerDeps extends ServiceDeps {
  readonly config: Config;
  readonly db: Database;
  readonly authenticator: Authenticator;
  readonly log: Logger;
}

export interface ApiServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The interceptor chain, outermost first: errors are mapped at one boundary; a call is authenticated and its
 * scope checked before it counts against the key's rate; input is validated before a database session opens.
 */
function interceptorsOf(deps: ApiServerDeps): Interceptor[] {
  return [errorBoundary(deps.log), authenticate(deps.authenticator), rateLimit(deps.db), validateRequests(), unitOfWork(deps.db)];
}

export function createApiHandler(
  deps: ApiServerDeps,
  peerAddressOf: (req: IncomingMessage) => string | undefined,
): (req: IncomingMessage, res: ServerResponse) => void {
  const interceptors = interceptorsOf(deps);
  const specs = createServiceSpecs(deps);
  const router = createConnectRouter({ interceptors });
  for (const spec of specs) for (const m of Object.values(spec.methods)) router.rpc(m.method, m.impl as never);
  const handlers = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
  const contextValuesOf = (req: IncomingMessage) => createContextValues().set(kPeerAddress, peerAddressOf(req));
  const routes = buildRouteTable(CONTRACT_SERVICES);
  let openApi: unknown;
  const gateway = createRestGateway({
    routes,
    invoke: createInProcessInvoker(specs, interceptors),
    contextValuesOf,
    maxBodyBytes: deps.config.platformLimits.messageContentBytes * 2,
    documents: { "/openapi.json": () => (openApi ??= buildOpenApi(routes)) },
  });

  return (req, res) => {
    const handler = handlers.get((req.url ?? "").split("?", 1)[0]!);
    if (!handler) {
      void gateway(req, res);
      return;
    }
    handler(universalRequestFromNodeRequest(req, res, undefined, contextValuesOf(req)))
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((e: unknown) => deps.log.warn("rpc response failed", { path: req.url, error: e }));
  };
}

/** How long a closing server waits for requests in flight. */
const CLOSE_GRACE_MS = 10_000;

/** The first bytes of every HTTP/2 prior-knowledge (h2c) connection. */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0");

export async function startApiServer(deps: ApiServerDeps, port: number, host: string): Promise<ApiServer> {
  // Connect and JSON clients speak HTTP/1.1; gRPC clients speak h2c. Node serves both on one port only through
  // TLS ALPN, so plain-text connections are routed by their first bytes to an HTTP/1.1 or an HTTP/2 server.
  const peerOfSession = new WeakMap<Http2Session, string | undefined>();
  const serve = createApiHandler(deps, (req) =>
    "stream" in req ? peerOfSession.get((req as unknown as Http2ServerRequest).stream.session!) : req.socket.remoteAddress,
  );
  // Requests still being answered: a graceful close lets them finish before the database goes away.
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    res.once("close", () => {
      if (--inFlight === 0) drained?.();
    });
    serve(req, res);
  };
  const h1 = http.createServer({ keepAliveTimeout: 65_000 }, handler);
  const h2 = http2.createServer(handler as never);
  let connectingPeer: string | undefined;
  // 'session' is emitted synchronously while the h2 server takes a connection.
  h2.on("session", (session) => peerOfSession.set(session, connectingPeer));
  const sockets = new Set<Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.once("data", (first) => {
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
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((resolve) => (drained = resolve)),
          new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref()),
        ]);
      }
      for (const socket of sockets) socket.destroy();
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
