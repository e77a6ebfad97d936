// One bounded load run with autocannon (in this process), with the CPU each process group used meanwhile.
import autocannon from "autocannon";
import { startCpuMeter, type CpuShare, type ProcessGroups } from "./cpu.js";
import { loadAverage } from "./machine.js";

export interface Scenario {
  readonly name: string;
  readonly path: string;
  readonly connections: number;
  /** Our p99 at most, and our throughput as a share of the baseline's at least. */
  readonly target: { readonly p99Ms: number; readonly ratio: number };
}

export interface RunFigures {
  /** Mean of the per-second request counts. */
  readonly requestsPerSecond: number;
  /** Requests answered during the run (any status). */
  readonly requests: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Responses other than 2xx, socket errors and timeouts: a run with any is invalid. */
  readonly failures: number;
  readonly cpu: CpuShare;
  /** Milliseconds of CPU per request, per process group: robust where throughput is not (a shared machine). */
  readonly cpuMsPerRequest: Readonly<Record<string, number>>;
  /** The 1-minute load average when the run started and when it ended. */
  readonly loadAverage: readonly [number, number];
}

/**
 * A seconds-bounded run against `url`; every request carries the next key of `keys`, round robin. As fast as the
 * server answers on `scenario.connections`, or at `rate` requests per second.
 */
export async function runLoad(
  url: string,
  scenario: Scenario,
  keys: readonly string[],
  seconds: number,
  groups: ProcessGroups,
  rate?: number,
): Promise<RunFigures> {
  let next = 0;
  const loadBefore = loadAverage()[0];
  const meter = startCpuMeter(groups);
  const startedAt = performance.now();
  const result = await autocannon({
    url,
    connections: scenario.connections,
    duration: seconds,
    timeout: 10,
    ...(rate === undefined ? {} : { overallRate: rate }),
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
  const cpu = meter.stop();
  const elapsedS = (performance.now() - startedAt) / 1000;
  const requests = result.requests.total;
  return {
    requestsPerSecond: result.requests.average,
    requests,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
    cpu,
    cpuMsPerRequest: Object.fromEntries(Object.entries(cpu.groups).map(([group, cores]) => [group, (cores * elapsedS * 1000) / Math.max(1, requests)])),
    loadAverage: [loadBefore, loadAverage()[0]],
  };
}
