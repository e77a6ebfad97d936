// Webhook signing, the Standard Webhooks scheme (standardwebhooks.com): the secret is `whsec_` + base64 key bytes,
// and each request carries webhook-id, webhook-timestamp and webhook-signature `v1,<base64 HMAC-SHA256 of
// "id.timestamp.body">`, so receivers can use any Standard Webhooks library.
import { createHmac, createSecretKey, randomBytes, type KeyObject } from "node:crypto";

const SECRET_PREFIX = "whsec_";

/** A new signing secret: 256 random bits. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

export interface SignedHeaders {
  readonly "webhook-id": string;
  readonly "webhook-timestamp": string;
  readonly "webhook-signature": string;
}

/** Secrets decoded into HMAC keys, at most this many kept (emptied when full): one per endpoint that receives events. */
const MAX_KEYS = 1000;
const keys = new Map<string, KeyObject>();

/** The secret's HMAC key, decoded once and not per request (decoding and importing it profiled beside the HMAC itself). */
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.clear();
    key = createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), "base64"));
    keys.set(secret, key);
  }
  return key;
}

/** The headers of one delivery attempt; the timestamp is the attempt's, so receivers can refuse stale replays. */
export function signWebhook(secret: string, eventId: string, body: string, at: Date): SignedHeaders {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const mac = createHmac("sha256", keyOf(secret)).update(`${eventId}.${timestamp}.${body}`).digest("base64");
  return { "webhook-id": eventId, "webhook-timestamp": timestamp, "webhook-signature": `v1,${mac}` };
}
