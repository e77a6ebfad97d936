// One HTTPS POST of a signed event. Only a 2xx answer is a delivery: redirects are never followed (a 3xx is a
// failure like any other status), and a timeout covers the whole exchange from DNS to the response status.
import type { RequestOptions } from "node:http";
import { Agent, request } from "node:https";
import { isIP } from "node:net";
import { createSecureContext } from "node:tls";
import { urlToHttpOptions } from "node:url";
import { BoundedMemo } from "../bounded-memo.js";
import { refusedAddress, type AddressPolicy } from "../net/address-policy.js";
import { createGuardedLookup, hostOf } from "./url-policy.js";
import { signWebhook } from "./signature.js";

export interface WebhookRequest {
  readonly url: string;
  readonly secret: string;
  readonly eventId: string;
  /** The exact JSON body, the same on every attempt. */
  readonly body: string;
}

export type SendOutcome = { readonly ok: true; readonly status: number } | { readonly ok: false; readonly error: string };

export interface SenderOptions extends AddressPolicy {
  readonly timeoutMs: number;
}

export type WebhookSender = (req: WebhookRequest) => Promise<SendOutcome>;

const USER_AGENT = "AgentMailbox-Webhooks/1";
/**
 * Connections to one receiver at once. The outbox's prompt attempts never exceed it: a request beyond it would wait
 * in the agent's queue with its timeout already running, and a slow receiver would see it time out unanswered.
 */
export const CONNECTIONS_PER_RECEIVER = 64;
/** Bytes of a receiver's response body read (and discarded) so its connection can be reused; more ends it. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export function createWebhookSender(options: SenderOptions): WebhookSender {
  const lookup = createGuardedLookup(options);
  // Kept-alive connections spare a TLS handshake per event. Every connection is opened through the guarded
  // lookup, so a reused one goes to an address that was checked when it was made. Idle ones close after 4 s,
  // before the common 5 s keep-alive of servers, so a reused connection is rarely one the receiver just closed.
  // Every connection kept while idle (maxFreeSockets = maxSockets): with fewer, a burst's extra connections closed
  // after it and the next burst paid their TLS set-up again (bench:inbound profiled 15% of the smtp process there).
  // One secure context for all (the default trust store, NODE_EXTRA_CA_CERTS included), not one per connection.
  const timedOut = new Error(`no answer within ${options.timeoutMs} ms`);
  const agent = new Agent({
    keepAlive: true,
    maxSockets: CONNECTIONS_PER_RECEIVER,
    maxFreeSockets: CONNECTIONS_PER_RECEIVER,
    timeout: 4_000,
    secureContext: createSecureContext(),
  });
  // A stored URL parsed and checked once, not per request (one per endpoint): its request options, or why its
  // literal address is refused (a literal needs no lookup, so the guarded lookup never sees it).
  const targets = new BoundedMemo<string, { readonly options: RequestOptions } | { readonly refused: string }>(1000);
  const targetOf = (url: string) =>
    targets.get(url, () => {
      const target = new URL(url);
      const host = hostOf(target);
      const literalWhy = isIP(host) ? refusedAddress(options, host, [host]) : undefined;
      return literalWhy ? { refused: `${host} is not a public address (${literalWhy})` } : { options: urlToHttpOptions(target) };
    });
  return async ({ url, secret, eventId, body }) => {
    const target = targetOf(url);
    if ("refused" in target) return { ok: false, error: target.refused };
    const headers = {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      "user-agent": USER_AGENT,
      ...signWebhook(secret, eventId, body, new Date()),
    };
    return new Promise<SendOutcome>((resolve) => {
      // One timer over the whole exchange, the lookup to the drained response (cheaper than an AbortSignal, which
      // the request follows with listeners of its own); the request's close ends it.
      const timer = setTimeout(() => req.destroy(timedOut), options.timeoutMs);
      const req = request(
        { ...target.options, method: "POST", port: 443, headers, lookup, agent },
        (res) => {
          const status = res.statusCode ?? 0;
          // Only the status matters; the body is drained (bounded) so the connection returns to the pool.
          let read = 0;
          res.on("data", (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_RESPONSE_BYTES) res.destroy();
          });
          res.on("error", () => undefined);
          res.resume();
          if (status >= 200 && status < 300) resolve({ ok: true, status });
          else if (status >= 300 && status < 400) resolve({ ok: false, error: `HTTP ${status} (redirects are not followed)` });
          else resolve({ ok: false, error: `HTTP ${status}` });
        },
      );
      req.on("close", () => clearTimeout(timer));
      req.on("error", (e: Error) => {
        resolve({ ok: false, error: e === timedOut ? `no answer within ${options.timeoutMs} ms` : e.message });
      });
      req.end(body);
    });
  };
}
