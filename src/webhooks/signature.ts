// Webhook signing, the Standard Webhooks scheme (standardwebhooks.com): the secret is `whsec_` + base64 key bytes,
// and each request carries webhook-id, webhook-timestamp and webhook-signature `v1,<base64 HMAC-SHA256 of
// "id.timestamp.body">`, so receivers can use any Standard Webhooks library.
import { createHmac, createSecretKey, randomBytes, type KeyObject } from "node:crypto";
import { BoundedMemo } from "../bounded-memo.js";

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

/**
 * Secrets decoded into HMAC keys once, not per request (decoding and importing profiled beside the HMAC itself); one
 * per endpoint that receives events.
 */
const keys = new BoundedMemo<string, KeyObject>(1000);
const keyOf = (secret: string): KeyObject => keys.get(secret, () => createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), "base64")));

/** The headers of one delivery attempt; the timestamp is the attempt's, so receivers can refuse stale replays. */
export function signWebhook(secret: string, eventId: string, body: string, at: Date): SignedHeaders {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const mac = createHmac("sha256", keyOf(secret)).update(`${eventId}.${timestamp}.${body}`).digest("base64");
  return { "webhook-id": eventId, "webhook-timestamp": timestamp, "webhook-signature": `v1,${mac}` };
}
