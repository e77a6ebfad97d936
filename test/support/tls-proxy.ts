// A TLS-terminating TCP proxy on loopback in front of a plaintext server: what an external Temporal (gRPC over TLS,
// ALPN h2) or PostgreSQL with ssl=on looks like to the service, with the client certificates it was shown counted.
// In `postgres` mode it speaks PostgreSQL's SSLRequest first (answers 'S', then TLS) and refuses a plaintext startup.
import { readFileSync } from "node:fs";
import { createConnection, createServer, type Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { Issued } from "./test-pki.js";

export interface TlsProxy {
  readonly port: number;
  /** TLS sessions established, and those whose client showed a certificate the CA signed. */
  readonly sessions: number;
  readonly authorizedClients: number;
  /** Most connections open at once. */
  readonly peakConnections: number;
  stop(): Promise<void>;
}

export interface TlsProxyOptions {
  readonly target: { host: string; port: number };
  readonly server: Issued;
  /** Require a client certificate signed by this CA (mTLS). */
  readonly clientCa?: string;
  readonly postgres?: boolean;
}

/** PostgreSQL's SSLRequest: length 8, code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 4, 210, 22, 47]);

export async function startTlsProxy(options: TlsProxyOptions): Promise<TlsProxy> {
  const context = {
    cert: readFileSync(options.server.cert),
    key: readFileSync(options.server.key),
    ALPNProtocols: ["h2"],
    ...(options.clientCa ? { ca: readFileSync(options.clientCa), requestCert: true, rejectUnauthorized: true } : {}),
  };
  const sockets = new Set<Socket>();
  let sessions = 0;
  let authorizedClients = 0;
  let open = 0;
  let peakConnections = 0;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  // The TLS server takes over sockets handed to it (emit "connection"), after the SSLRequest in postgres mode.
  const terminator = createTlsServer(context, (tls: TLSSocket) => {
    track(tls);
    sessions++;
    if (tls.authorized) authorizedClients++;
    const upstream = createConnection(options.target);
    track(upstream);
    tls.pipe(upstream);
    upstream.pipe(tls);
    tls.on("close", () => upstream.destroy());
    upstream.on("close", () => tls.destroy());
  });
  terminator.on("tlsClientError", () => undefined);
  const terminate = (raw: Socket) => void terminator.emit("connection", raw);
  const server = createServer((raw) => {
    track(raw);
    open++;
    peakConnections = Math.max(peakConnections, open);
    raw.once("close", () => open--);
    if (!options.postgres) return terminate(raw);
    raw.once("readable", function first() {
      const head = raw.read(8) as Buffer | null;
      if (head === null) return void raw.once("readable", first);
      if (!head.equals(SSL_REQUEST)) return void raw.destroy();
      raw.write("S");
      terminate(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    get sessions() {
      return sessions;
    },
    get authorizedClients() {
      return authorizedClients;
    },
    get peakConnections() {
      return peakConnections;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
