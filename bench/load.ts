// One bounded load run with autocannon (in this process), with the CPU each process group used meanwhile.
import autocannon from "autocannon";
import { startCpuMeter, type CpuShare, type ProcessGroups } from "./cpu.js";

export interface Scenario {
  readonly name: string;
  readonly path: string;
  readonly connections: number;
  readonly target: { readonly requestsPerSecond: number; readonly p99Ms: number };
}

export interface RunFigures {
  /** Mean of the per-second request counts. */
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Responses other than 2xx, socket errors and timeouts: a run with any is invalid. */
  readonly failures: number;
  readonly cpu: CpuShare;
}

/** A seconds-bounded run against `url`; every request carries the next key of `keys`, round robin. */
export async function runLoad(url: string, scenario: Scenario, keys: readonly string[], seconds: number, groups: ProcessGroups): Promise<RunFigures> {
  let next = 0;
  const meter = startCpuMeter(groups);
  const result = await autocannon({
    url,
    connections: scenario.connections,
    duration: seconds,
    timeout: 10,
    requests: [
      {
        method: "GET",
        path: scenario.path,
        // Spreads calls over all tenants, as many agents would: every key is used, none is hot.
        setupRequest: (request) => {
          request.headers = { ...request.headers, "x-api-key": keys[next++ % keys.length]! };
          return request;
        },
      },
    ],
  });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
    cpu: meter.stop(),
  };
}
