import { describe, expect, test } from "vitest";
import { messageReceivedBody } from "../../src/events/message-received.js";
import { newSigningSecret, signWebhook } from "../../src/webhooks/signature.js";
import { webhookRetryDelayMs } from "../../workflows/webhook-delivery.js";

describe("webhook signatures", () => {
  test("match the Standard Webhooks reference vector", () => {
    // The example of the Standard Webhooks specification and its reference libraries (also Svix's documentation).
    const headers = signWebhook(
      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      "msg_p5jXN8AQM9LWM0D4loKWxJek",
      '{"test": 2432232314}',
      new Date(1614265330_000),
    );
    expect(headers).toEqual({
      "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "webhook-timestamp": "1614265330",
      "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    });
  });

  test("sign with each secret's own key, the same when its decoded key is remembered", () => {
    const vector = ["msg_p5jXN8AQM9LWM0D4loKWxJek", '{"test": 2432232314}', new Date(1614265330_000)] as const;
    const reference = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    const other = newSigningSecret();
    const first = signWebhook(other, ...vector)["webhook-signature"];
    expect(first).not.toBe(reference);
    // The reference secret after another's key was remembered, and both again: each with its own key, every time.
    expect(signWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ...vector)["webhook-signature"]).toBe(reference);
    expect(signWebhook(other, ...vector)["webhook-signature"]).toBe(first);
    expect(signWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ...vector)["webhook-signature"]).toBe(reference);
  });

  test("use secrets of whsec_ and 32 random bytes in base64, different every time", () => {
    const a = newSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), "base64")).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(a);
  });
});

describe("the message.received payload", () => {
  test("carries the event id, type, time and the three ids, in this order and nothing else", () => {
    const body = messageReceivedBody("evt_0123456789abcdef01234567", new Date("2026-01-02T03:04:05.006Z"), {
      organizationId: "7d1b5a8e-2c4f-4a59-9a43-2f1d8d7f0c11",
      inboxId: "inb_aaaaaaaaaaaaaaaaaaaaaaaa",
      threadId: "thr_bbbbbbbbbbbbbbbbbbbbbbbb",
      messageId: "msg_cccccccccccccccccccccccc",
    });
    expect(body).toBe(
      '{"id":"evt_0123456789abcdef01234567","type":"message.received","createdAt":"2026-01-02T03:04:05.006Z",' +
        '"data":{"messageId":"msg_cccccccccccccccccccccccc","inboxId":"inb_aaaaaaaaaaaaaaaaaaaaaaaa","threadId":"thr_bbbbbbbbbbbbbbbbbbbbbbbb"}}',
    );
  });
});

describe("the retry backoff", () => {
  const schedule = { initialMs: 30_000, maxMs: 3_600_000 };

  test.each([
    [1, 15_000, 30_000],
    [2, 30_000, 60_000],
    [3, 60_000, 120_000],
    [7, 960_000, 1_920_000],
    [8, 1_800_000, 3_600_000], // 30 s · 2^7 = 64 min, capped at the hour
    [20, 1_800_000, 3_600_000],
  ])("after %i failed attempts waits between %i and %i ms", (attempts, low, high) => {
    expect(webhookRetryDelayMs(attempts, schedule, 0)).toBe(low);
    expect(webhookRetryDelayMs(attempts, schedule, 1)).toBe(high);
    expect(webhookRetryDelayMs(attempts, schedule, 0.5)).toBe((low + high) / 2);
  });
});
