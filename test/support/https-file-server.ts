// A real HTTPS server of files for the URL attachment tests: port 443 of a random 127.0.44.x with the test CA's
// certificate (as the webhook receivers), answering each path as a test tells it to, and counting the requests each
// path got, so a test can show that a refused URL was never asked.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:https";
import { listenOnFreeAddress, TLS } from "./https-receiver.js";

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface HttpsFileServer {
  /** The address it listens on (port 443). */
  readonly host: string;
  /** https://<host><path>, answered by `handler` from now on. */
  route(path: string, handler: Handler): string;
  /** Requests a path got so far. */
  hits(path: string): number;
  close(): Promise<void>;
}

export async function startHttpsFileServer(): Promise<HttpsFileServer> {
  const routes = new Map<string, Handler>();
  const hits = new Map<string, number>();
  const server = createServer(TLS, (req, res) => {
    const path = req.url ?? "";
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const handler = routes.get(path);
    if (handler) handler(req, res);
    else res.writeHead(404).end();
  });
  const host = await listenOnFreeAddress(server);
  return {
    host,
    route(path, handler) {
      routes.set(path, handler);
      return `https://${host}${path}`;
    },
    hits: (path) => hits.get(path) ?? 0,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
