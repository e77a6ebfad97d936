// The webhook sender holds as many connections to one receiver as the outbox runs prompt attempts: a request
// beyond the agent's connections would wait in its queue with its timeout already running, and a slow receiver
// would see it time out without ever being asked. Real HTTPS to a real receiver (the test CA is trusted through
// NODE_EXTRA_CA_CERTS, set by the global setup).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONNECTIONS_PER_RECEIVER, createWebhookSender } from "../../src/webhooks/sender.js";
import { startHttpsReceiver, type HttpsReceiver } from "../support/https-receiver.js";

let receiver: HttpsReceiver;
beforeAll(async () => {
  receiver = await startHttpsReceiver();
});
afterAll(() => receiver.close());

describe("webhook sender connections", () => {
  it("sends as many requests at once to one receiver as the outbox's prompt attempts", async () => {
    // The receiver answers none until every request is in: with fewer connections than requests, the ones left in
    // the agent's queue never arrive, and all time out.
    let release!: () => void;
    const allIn = new Promise<void>((resolve) => (release = resolve));
    const endpoint = receiver.endpoint(async () => {
      await allIn;
      return 204;
    });
    void endpoint.waitFor(CONNECTIONS_PER_RECEIVER, 15_000).then(release, () => undefined);
    const send = createWebhookSender({ timeoutMs: 15_000, allowHosts: [receiver.host] });
    const outcomes = await Promise.all(
      Array.from({ length: CONNECTIONS_PER_RECEIVER }, (_, i) =>
        send({ url: endpoint.url, secret: "whsec_test", eventId: `evt_${i}`, body: JSON.stringify({ i }) }),
      ),
    );
    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    expect(endpoint.requests).toHaveLength(CONNECTIONS_PER_RECEIVER);
  });
});
