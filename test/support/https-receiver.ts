// A real HTTPS webhook receiver for tests: it listens on port 443 of a random 127.0.44.x address with a certificate
// of the test CA (trusted through NODE_EXTRA_CA_CERTS, set by the global setup), keeps every request's raw body,
// and verifies signatures the way a tenant's receiver would, independently of the service's signing code.
import { createHmac, randomBytes, randomInt, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { createServer, type Server } from "node:https";

const TLS_DIR = new URL("../fixtures/webhook-tls/", import.meta.url);
/** The certificate of every 127.0.44.x, signed by the test CA the test processes trust. */
export const TLS = { cert: readFileSync(new URL("receiver.pem", TLS_DIR)), key: readFileSync(new URL("receiver-key.pem", TLS_DIR)) };

export interface ReceivedRequest {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  /** The raw body, exactly as received. */
  readonly body: string;
}

/** How the receiver answers the n-th request (0-based) of an endpoint: a status, and headers such as Location. */
export type Answer = (n: number) => AnswerValue | Promise<AnswerValue>;
type AnswerValue = number | { status: number; headers?: Record<string, string> };

export interface ReceiverEndpoint {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Resolves once the endpoint has had `count` requests. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
}

export interface HttpsReceiver {
  /** The address the receiver listens on (port 443); list it in WEBHOOK_ALLOW_HOSTS. */
  readonly host: string;
  /** A new endpoint path on this receiver; answers 204 unless told otherwise. */
  endpoint(answer?: Answer): ReceiverEndpoint;
  close(): Promise<void>;
}

export async function startHttpsReceiver(): Promise<HttpsReceiver> {
  const routes = new Map<string, { answer: Answer; requests: ReceivedRequest[]; changed: () => void }>();
  const server = createServer(TLS, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const route = routes.get(req.url ?? "");
      if (!route) return void res.writeHead(404).end();
      const n = route.requests.length;
      route.requests.push({ method: req.method ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      route.changed();
      void Promise.resolve(route.answer(n)).then((a) => {
        const { status, headers } = typeof a === "number" ? { status: a, headers: {} } : a;
        res.writeHead(status, headers).end();
      });
    });
  });
  const host = await listenOnFreeAddress(server);
  return {
    host,
    endpoint(answer = () => 204) {
      const path = `/hooks/${randomBytes(6).toString("hex")}`;
      const waiters = new Set<() => void>();
      const route = { answer, requests: [] as ReceivedRequest[], changed: () => waiters.forEach((w) => w()) };
      routes.set(path, route);
      return {
        url: `https://${host}${path}`,
        requests: route.requests,
        waitFor(count, timeoutMs = 20_000) {
          return new Promise((resolve, reject) => {
            const check = () => {
              if (route.requests.length < count) return;
              waiters.delete(check);
              clearTimeout(timer);
              resolve(route.requests);
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              reject(new Error(`${path} had ${route.requests.length} requests, not ${count}, within ${timeoutMs} ms`));
            }, timeoutMs);
            waiters.add(check);
            check();
          });
        },
      };
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Port 443 of a random 127.0.44.x (the certificate's addresses), another one when that is taken. */
export async function listenOnFreeAddress(server: Server): Promise<string> {
  for (let tries = 0; ; tries++) {
    const host = `127.0.44.${randomInt(1, 255)}`;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(443, host, () => {
          server.off("error", reject);
          resolve();
        });
      });
      return host;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE" || tries > 20) throw e;
    }
  }
}

/**
 * Verifies a Standard Webhooks signature as the README tells receivers to: HMAC-SHA256 of "id.timestamp.body" with
 * the base64-decoded secret, compared in constant time, and a timestamp within the tolerance.
 */
export function verifySignature(secret: string, req: ReceivedRequest, toleranceS = 300): boolean {
  const id = req.headers["webhook-id"];
  const timestamp = req.headers["webhook-timestamp"];
  const signatures = req.headers["webhook-signature"];
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceS) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${req.body}`).digest();
  return signatures.split(" ").some((s) => {
    const [version, mac] = s.split(",");
    const given = Buffer.from(mac ?? "", "base64");
    return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
  });
}
