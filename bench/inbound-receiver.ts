// The webhook receiver of the inbound benchmark, run as a child process (fork, with IPC) so its TLS work is
// accounted apart: HTTPS on port 443 of a 127.0.44.x address with the test certificate of test/fixtures/webhook-tls
// (the service trusts it through NODE_EXTRA_CA_CERTS, and WEBHOOK_ALLOW_HOSTS names the address), as
// test/support/https-receiver.ts does for the tests. For every message id (data.messageId of the payload) it keeps
// when the first request came, when the first 2xx was answered, and how many requests came.
//
// It answers 503 to a seeded-random share of requests (`failRatio`), 204 otherwise.
//
// IPC: parent → {cmd: "fail", ratio} | {cmd: "take"};  child → {ready: host} | {taken: Records}.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { epochNow } from "./clock.js";

const TLS_DIR = new URL("../test/fixtures/webhook-tls/", import.meta.url);

export interface ReceiverRecord {
  /** Epoch ms (high resolution) of the first request for this message, and of the first one answered 2xx. */
  readonly firstAt: number;
  readonly okAt: number | null;
  readonly requests: number;
}

export interface ReceiverTake {
  readonly records: Readonly<Record<string, ReceiverRecord>>;
  readonly requests: number;
  readonly answered5xx: number;
  /** Requests whose body was not a message.received event. */
  readonly malformed: number;
}

export type ReceiverCommand = { readonly cmd: "fail"; readonly ratio: number } | { readonly cmd: "take" };

const now = epochNow;

/** mulberry32: a small seeded PRNG, so every run fails the same sequence of requests. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function main(): Promise<void> {
  let records = new Map<string, { firstAt: number; okAt: number | null; requests: number }>();
  let requests = 0;
  let answered5xx = 0;
  let malformed = 0;
  let failRatio = 0;
  const random = seededRandom(20_260_101);

  const server = createServer(
    { cert: readFileSync(new URL("receiver.pem", TLS_DIR)), key: readFileSync(new URL("receiver-key.pem", TLS_DIR)) },
    (req, res) => {
      const at = now();
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        requests++;
        let messageId: string | undefined;
        try {
          messageId = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { data?: { messageId?: string } }).data?.messageId;
        } catch {
          messageId = undefined;
        }
        if (!messageId) {
          malformed++;
          res.writeHead(400).end();
          return;
        }
        const fail = failRatio > 0 && random() < failRatio;
        let record = records.get(messageId);
        if (!record) records.set(messageId, (record = { firstAt: at, okAt: null, requests: 0 }));
        record.requests++;
        if (fail) {
          answered5xx++;
          res.writeHead(503).end();
        } else {
          record.okAt ??= now();
          res.writeHead(204).end();
        }
      });
    },
  );
  const host = await listenOnFreeAddress(server);
  process.on("message", (message: ReceiverCommand) => {
    if (message.cmd === "fail") failRatio = message.ratio;
    if (message.cmd === "take") {
      const taken: ReceiverTake = { records: Object.fromEntries(records), requests, answered5xx, malformed };
      records = new Map();
      requests = answered5xx = malformed = 0;
      process.send!({ taken });
    }
  });
  process.on("disconnect", () => process.exit(0));
  process.send!({ ready: host });
}

/** Port 443 of a 127.0.44.x address the certificate names (200–254, away from the tests' random picks). */
async function listenOnFreeAddress(server: Server): Promise<string> {
  for (let last = 254; last >= 200; last--) {
    const host = `127.0.44.${last}`;
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
      if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
    }
  }
  throw new Error("no free 127.0.44.x:443 for the webhook receiver");
}

await main();
