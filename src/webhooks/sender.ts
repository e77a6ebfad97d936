// One HTTPS POST of a signed event. Only a 2xx answer is a delivery: redirects are never followed (a 3xx is a
// failure like any other status), and a timeout covers the whole exchange from DNS to the response status.
import { isIP } from "node:net";
import { createSecureContext } from "node:tls";
import { Agent, type Dispatcher } from "undici";
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
 * in the dispatcher's queue with its timeout already running, and a slow receiver would see it time out unasked.
 */
export const CONNECTIONS_PER_RECEIVER = 64;
/** Bytes of a receiver's response body read (and discarded) so its connection can be reused; more ends it. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** Idle connections close after 4 s, before the common 5 s keep-alive of servers, so a reused one is rarely closed. */
const IDLE_CONNECTION_MS = 4_000;

/** Where a stored URL's requests go (parsed and checked once per endpoint), or why its literal address is refused. */
type Target = { readonly origin: string; readonly path: string } | { readonly refused: string };

export function createWebhookSender(options: SenderOptions): WebhookSender {
  const timedOut = `no answer within ${options.timeoutMs} ms`;
  // undici's dispatcher, not node:https: a request costs the processing thread about a quarter less CPU (no
  // ClientRequest, IncomingMessage or header object per request; bench/webhook-send.ts). HTTP/1.1 only, one request
  // at a time per connection (no pipelining), kept alive to spare a TLS handshake per event. Every connection is
  // opened through the guarded lookup, so a reused one goes to an address that was checked when it was made. One
  // secure context for all (the default trust store, NODE_EXTRA_CA_CERTS included), certificates verified.
  const dispatcher = new Agent({
    connections: CONNECTIONS_PER_RECEIVER,
    pipelining: 1,
    allowH2: false,
    keepAliveTimeout: IDLE_CONNECTION_MS,
    keepAliveMaxTimeout: IDLE_CONNECTION_MS,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    // A longer body ends its connection (the answer was taken from the status already).
    maxResponseSize: MAX_RESPONSE_BYTES,
    connect: { lookup: createGuardedLookup(options), secureContext: createSecureContext(), timeout: options.timeoutMs },
  });
  // A literal address needs no lookup, so the guarded lookup never sees it: it is checked here.
  const targets = new BoundedMemo<string, Target>(1000);
  const targetOf = (url: string) =>
    targets.get(url, (): Target => {
      const target = new URL(url);
      const host = hostOf(target);
      const literalWhy = isIP(host) ? refusedAddress(options, host, [host]) : undefined;
      if (literalWhy) return { refused: `${host} is not a public address (${literalWhy})` };
      // Port 443 always (the URL policy allows no other).
      return { origin: `https://${target.hostname}:443`, path: target.pathname + target.search };
    });

  return async ({ url, secret, eventId, body }) => {
    const target = targetOf(url);
    if ("refused" in target) return { ok: false, error: target.refused };
    const signed = signWebhook(secret, eventId, body, new Date());
    // Flat name/value pairs: undici writes them as given (content-length and host are its own).
    const headers = [
      "content-type", "application/json",
      "user-agent", USER_AGENT,
      "webhook-id", signed["webhook-id"],
      "webhook-timestamp", signed["webhook-timestamp"],
      "webhook-signature", signed["webhook-signature"],
    ];
    return new Promise<SendOutcome>((resolve) => {
      let settled = false;
      let abort: ((reason: Error) => void) | undefined;
      const settle = (outcome: SendOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      // One timer over the whole exchange, the lookup to the response status. A request still waiting for its
      // connection when it fires is aborted as soon as it would be written.
      const timer = setTimeout(() => {
        settle({ ok: false, error: timedOut });
        abort?.(new Error(timedOut));
      }, options.timeoutMs);
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(controller) {
          if (settled) controller.abort(new Error(timedOut));
          else abort = (reason) => controller.abort(reason);
        },
        onResponseStart(_controller, status) {
          // An informational answer (1xx) comes before the final one.
          if (status < 200) return;
          if (status >= 200 && status < 300) settle({ ok: true, status });
          else if (status >= 300 && status < 400) settle({ ok: false, error: `HTTP ${status} (redirects are not followed)` });
          else settle({ ok: false, error: `HTTP ${status}` });
        },
        // Only the status matters; the body is read (bounded by maxResponseSize) so the connection can be reused.
        onResponseData: () => undefined,
        onResponseEnd: () => undefined,
        onResponseError: (_controller, error) => settle({ ok: false, error: error.message }),
      };
      dispatcher.dispatch({ origin: target.origin, path: target.path, method: "POST", headers, body }, handler);
    });
  };
}
