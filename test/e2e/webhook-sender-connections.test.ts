// The webhook sender against real HTTPS receivers (the test CA is trusted through NODE_EXTRA_CA_CERTS, set by the
// global setup): as many connections to one receiver as the outbox runs prompt attempts (a request beyond the
// agent's connections would wait in its queue with its timeout already running, and a slow receiver would see it
// time out without ever being asked), and what every request keeps whatever carries it: the certificate verified, a
// name's addresses checked when it connects, redirects not followed, a response body read only so far, one timeout
// over the whole exchange.
import { createServer, type Server } from "node:https";
import { generate } from "selfsigned";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONNECTIONS_PER_RECEIVER, createWebhookSender } from "../../src/webhooks/sender.js";
import { listenOnFreeAddress, startHttpsReceiver, TLS, type HttpsReceiver } from "../support/https-receiver.js";

let receiver: HttpsReceiver;
beforeAll(async () => {
  receiver = await startHttpsReceiver();
});
afterAll(() => receiver.close());

const event = (i: number) => ({ secret: "whsec_dGVzdA==", eventId: `evt_${i}`, body: JSON.stringify({ i }) });

/** An HTTPS server on port 443 of a 127.0.44.x with `tls`, answering every request with `handle`. */
async function serve(tls: { cert: string | Buffer; key: string | Buffer }, handle: Parameters<typeof createServer>[1]): Promise<{ host: string; server: Server }> {
  const server = createServer(tls, handle);
  const host = await listenOnFreeAddress(server);
  return { host, server };
}

function withTimeout<T>(promise: Promise<T>, ms: number, why: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(why)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

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
    const outcomes = await Promise.all(Array.from({ length: CONNECTIONS_PER_RECEIVER }, (_, i) => send({ url: endpoint.url, ...event(i) })));
    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    expect(endpoint.requests).toHaveLength(CONNECTIONS_PER_RECEIVER);
  });
});

describe("webhook sender requests", () => {
  it("posts the body with its content type, user agent and signature headers, over kept-alive connections", async () => {
    const endpoint = receiver.endpoint();
    const send = createWebhookSender({ timeoutMs: 10_000, allowHosts: [receiver.host] });
    // The query goes with the path: the receiver routes by both, so this one finds no endpoint.
    expect(await send({ url: `${endpoint.url}?n=1`, ...event(1) })).toEqual({ ok: false, error: "HTTP 404" });
    for (const i of [7, 8, 9]) expect(await send({ url: endpoint.url, ...event(i) })).toEqual({ ok: true, status: 204 });
    expect(endpoint.requests.map((r) => r.headers["webhook-id"])).toEqual(["evt_7", "evt_8", "evt_9"]);
    const [req] = endpoint.requests;
    expect(req!.method).toBe("POST");
    expect(req!.body).toBe(event(7).body);
    expect(req!.headers["content-type"]).toBe("application/json");
    expect(req!.headers["content-length"]).toBe(String(Buffer.byteLength(event(7).body)));
    expect(req!.headers["user-agent"]).toBe("AgentMailbox-Webhooks/1");
    expect(req!.headers["webhook-id"]).toBe("evt_7");
    expect(req!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(req!.headers.host).toBe(receiver.host);
  });

  it("refuses a name that resolves to a non-public address when it connects (the guarded lookup)", async () => {
    // localhost resolves to loopback; nothing is sent, whatever listens there.
    const send = createWebhookSender({ timeoutMs: 10_000, allowHosts: [receiver.host] });
    const outcome = await send({ url: "https://localhost/hook", ...event(1) });
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.error).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), which is not a public address \(loopback\)$/);
  });

  it("refuses a receiver whose certificate is not trusted", async () => {
    const untrusted = await generate([{ name: "commonName", value: "127.0.44.1" }], { keySize: 2048, algorithm: "sha256" });
    let requests = 0;
    const { host, server } = await serve({ cert: untrusted.cert, key: untrusted.private }, (_req, res) => {
      requests++;
      res.writeHead(204).end();
    });
    try {
      const send = createWebhookSender({ timeoutMs: 10_000, allowHosts: [host] });
      const outcome = await send({ url: `https://${host}/hook`, ...event(1) });
      expect(outcome.ok).toBe(false);
      expect(!outcome.ok && outcome.error).toMatch(/certificate/i);
      expect(requests).toBe(0);
    } finally {
      await close(server);
    }
  });

  it("does not follow a redirect: a 3xx is a failure and its Location is never asked", async () => {
    const target = receiver.endpoint();
    const endpoint = receiver.endpoint(() => ({ status: 307, headers: { location: target.url } }));
    const send = createWebhookSender({ timeoutMs: 10_000, allowHosts: [receiver.host] });
    expect(await send({ url: endpoint.url, ...event(1) })).toEqual({ ok: false, error: "HTTP 307 (redirects are not followed)" });
    expect(await send({ url: endpoint.url, ...event(2) })).toEqual({ ok: false, error: "HTTP 307 (redirects are not followed)" });
    expect(endpoint.requests).toHaveLength(2);
    expect(target.requests).toHaveLength(0);
  });

  it("answers by the status of a response whose body is endless, ends that connection and sends the next request", async () => {
    // 200 and then a body that never ends: the status decides; the body is read only up to its bound, then the
    // connection is dropped, so a receiver cannot hold the sender's memory or a connection forever.
    let requests = 0;
    const closed: Promise<unknown>[] = [];
    const chunk = Buffer.alloc(64 * 1024, 120);
    const { host, server } = await serve(TLS, (req, res) => {
      requests++;
      req.resume();
      res.writeHead(200, { "content-type": "text/plain" });
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    });
    server.on("secureConnection", (socket) => closed.push(new Promise((resolve) => socket.once("close", resolve))));
    try {
      const send = createWebhookSender({ timeoutMs: 10_000, allowHosts: [host] });
      expect(await send({ url: `https://${host}/hook`, ...event(1) })).toEqual({ ok: true, status: 200 });
      expect(await send({ url: `https://${host}/hook`, ...event(2) })).toEqual({ ok: true, status: 200 });
      expect(requests).toBe(2);
      // The server sees each connection closed by the sender (not left streaming).
      await withTimeout(Promise.all(closed), 10_000, "the sender kept reading an endless body");
    } finally {
      await close(server);
    }
  });

  it("waits past an informational answer (103) for the final status", async () => {
    const { host, server } = await serve(TLS, (req, res) => {
      req.resume();
      res.writeEarlyHints({ link: "</style.css>; rel=preload; as=style" });
      res.writeHead(503).end();
    });
    try {
      const send = createWebhookSender({ timeoutMs: 10_000, allowHosts: [host] });
      expect(await send({ url: `https://${host}/hook`, ...event(1) })).toEqual({ ok: false, error: "HTTP 503" });
    } finally {
      await close(server);
    }
  });

  it("counts a receiver that never answers as a failure once the timeout is over", async () => {
    const endpoint = receiver.endpoint(() => new Promise(() => undefined));
    const send = createWebhookSender({ timeoutMs: 300, allowHosts: [receiver.host] });
    const started = performance.now();
    expect(await send({ url: endpoint.url, ...event(1) })).toEqual({ ok: false, error: "no answer within 300 ms" });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(endpoint.requests).toHaveLength(1);
  });

  it("refuses a stored literal address outside the policy without connecting", async () => {
    const send = createWebhookSender({ timeoutMs: 10_000, allowHosts: [] });
    expect(await send({ url: `https://${receiver.host}/hook`, ...event(1) })).toEqual({ ok: false, error: `${receiver.host} is not a public address (loopback)` });
  });
});
