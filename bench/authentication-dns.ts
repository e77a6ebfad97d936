// The DNS server of `npm run bench:authentication`, in a worker thread so that its CPU is not counted as the
// evaluation's (the bench reads its own thread's CPU time). It publishes the senders' zone (see authentication.ts)
// and answers how many questions arrived.
import { parentPort, workerData } from "node:worker_threads";
import { startDnsServer } from "../test/support/dns-server.js";

export interface BenchZone {
  /** The sender domains: each with SPF (an include of the ESP's record), a DKIM key at s1 and a DMARC record. */
  readonly domains: readonly string[];
  /** The DKIM key record's p=. */
  readonly publicKey: string;
  /** Every answer is held this long (a recursive resolver's miss). */
  readonly delayMs: number;
}

export const ESP_SPF = "_spf.esp.example";

const zone = workerData as BenchZone;
const dns = await startDnsServer();
dns.set(ESP_SPF, [{ type: "TXT", text: "v=spf1 ip4:192.0.2.0/24 ip4:198.51.100.0/24 -all" }]);
for (const domain of zone.domains) {
  dns.set(domain, [{ type: "TXT", text: `v=spf1 include:${ESP_SPF} -all` }]);
  dns.set(`s1._domainkey.${domain}`, [{ type: "TXT", text: `v=DKIM1; k=rsa; p=${zone.publicKey}` }]);
  dns.set(`_dmarc.${domain}`, [{ type: "TXT", text: "v=DMARC1; p=reject; rua=mailto:dmarc@esp.example" }]);
}
if (zone.delayMs > 0) dns.delay("*", zone.delayMs);
parentPort!.on("message", (message: "count" | "stop") => {
  if (message === "stop") void dns.stop().then(() => parentPort!.close());
  else parentPort!.postMessage(dns.totalQueries);
});
parentPort!.postMessage({ address: dns.address });
