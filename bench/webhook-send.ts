// `NODE_EXTRA_CA_CERTS=test/fixtures/webhook-tls/ca.pem node_modules/.bin/node --import tsx bench/webhook-send.ts`:
// CPU per webhook request of the service's sender (src/webhooks/sender.ts), the inner loop of bench:inbound-cpu's
// webhook share. The receiver of bench:inbound runs as a child process (its TLS accounted apart); this process sends
// BENCH_WEBHOOK_REQUESTS signed events (BENCH_WEBHOOK_CONCURRENCY at once, kept-alive connections as in the service)
// and prints its own CPU (user + system, every thread of it) per request, round by round (the first warms up).
//
// Settings (env): BENCH_WEBHOOK_REQUESTS=2000  BENCH_WEBHOOK_CONCURRENCY=32  BENCH_WEBHOOK_ROUNDS=4
import { fork } from "node:child_process";
import { resolve } from "node:path";
import { createWebhookSender } from "../src/webhooks/sender.js";
import { loadAverage } from "./machine.js";
import type { ReceiverCommand } from "./inbound-receiver.js";
import { envNumber } from "./settings.js";

const REQUESTS = envNumber(process.env, "BENCH_WEBHOOK_REQUESTS", 2000, 1, 1_000_000);
const CONCURRENCY = envNumber(process.env, "BENCH_WEBHOOK_CONCURRENCY", 32, 1, 64);
const ROUNDS = envNumber(process.env, "BENCH_WEBHOOK_ROUNDS", 4, 2, 50);

if (!process.env["NODE_EXTRA_CA_CERTS"]) throw new Error("set NODE_EXTRA_CA_CERTS=test/fixtures/webhook-tls/ca.pem (the receiver's CA)");

const receiver = fork(resolve("bench/inbound-receiver.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
const host = await new Promise<string>((done, fail) => {
  receiver.once("message", (m: { ready?: string }) => (m.ready ? done(m.ready) : fail(new Error("receiver did not start"))));
  receiver.once("exit", (code) => fail(new Error(`receiver exited with ${code}`)));
});
const send = createWebhookSender({ timeoutMs: 10_000, allowHosts: [host] });
const url = `https://${host}/hooks/bench`;
const secret = "whsec_" + Buffer.alloc(32, 7).toString("base64");
// About the size of a message.received event of a 10 KB message (its preview, addresses and ids).
const bodyOf = (i: number) =>
  JSON.stringify({
    type: "message.received",
    id: `evt_${i}`,
    createdAt: new Date(0).toISOString(),
    data: { messageId: `msg_${i}`, inboxId: "inb_bench", threadId: `thr_${i}`, from: "sender@example.com", subject: "x".repeat(80), preview: "y".repeat(900) },
  });

async function round(): Promise<{ cpuUs: number; failed: number }> {
  let next = 0;
  let failed = 0;
  const start = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const outcome = await send({ url, secret, eventId: `evt_${i}`, body: bodyOf(i) });
        if (!outcome.ok) failed++;
      }
    }),
  );
  const used = process.cpuUsage(start);
  return { cpuUs: used.user + used.system, failed };
}

for (let r = 0; r < ROUNDS; r++) {
  const load = loadAverage();
  const { cpuUs, failed } = await round();
  receiver.send({ cmd: "take" } satisfies ReceiverCommand);
  console.log(
    `${r === 0 ? "warm-up" : `round ${r}`}: ${REQUESTS} requests, ${failed} failed, ${(cpuUs / REQUESTS).toFixed(1)} us CPU a request, load ${load[0].toFixed(2)}`,
  );
}
receiver.disconnect();
process.exit(0);
