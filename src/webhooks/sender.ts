// One HTTPS POST of a signed event. Only a 2xx answer is a delivery: redirects are never followed (a 3xx is a
// failure like any other status), and a timeout covers the whole exchange from DNS to the response status.
import { request } from "node:https";
import { isIP } from "node:net";
import { createGuardedLookup, hostOf, nonPublicReason, type AddressPolicy } from "./url-policy.js";
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

export function createWebhookSender(options: SenderOptions): WebhookSender {
  const lookup = createGuardedLookup(options);
  return async ({ url, secret, eventId, body }) => {
    const target = new URL(url);
    const host = hostOf(target);
    // A literal address needs no lookup, so the guarded lookup never sees it: check it here.
    const literalWhy = isIP(host) && !options.allowHosts.includes(host) ? nonPublicReason(host) : undefined;
    if (literalWhy) return { ok: false, error: `${host} is not a public address (${literalWhy})` };
    const headers = {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      "user-agent": USER_AGENT,
      ...signWebhook(secret, eventId, body, new Date()),
    };
    return new Promise<SendOutcome>((resolve) => {
      const req = request(
        target,
        // agent: false gives every attempt a fresh connection, hence a fresh (checked) resolution.
        { method: "POST", port: 443, headers, lookup, agent: false, signal: AbortSignal.timeout(options.timeoutMs) },
        (res) => {
          const status = res.statusCode ?? 0;
          // Only the status matters; the body is discarded and the connection closed.
          res.destroy();
          if (status >= 200 && status < 300) resolve({ ok: true, status });
          else if (status >= 300 && status < 400) resolve({ ok: false, error: `HTTP ${status} (redirects are not followed)` });
          else resolve({ ok: false, error: `HTTP ${status}` });
        },
      );
      req.on("error", (e: Error) => {
        const timedOut = e.name === "AbortError" || e.name === "TimeoutError";
        resolve({ ok: false, error: timedOut ? `no answer within ${options.timeoutMs} ms` : e.message });
      });
      req.end(body);
    });
  };
}
