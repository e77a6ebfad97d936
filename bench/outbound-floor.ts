// The Temporal floor of the outbound benchmark, run as a child process against the stack's Temporal dev server:
//
//   node --import tsx bench/outbound-floor.ts '<json FloorJob>'
//
// What one workflow per message costs when the workflow does nothing: a worker of its own (task queue
// bench-floor) runs the workflows of bench/outbound-floor-workflow.ts with no-op activities, and `count` of each
// shape are started at `rate` per second (open loop) and awaited. Per shape it prints the server's CPU per
// workflow (/proc of the dev server) and this process's (worker and client together). Bounded: every shape stops
// after its count, every wait after FLOOR_TIMEOUT_MS.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Client, Connection } from "@temporalio/client";
import { DefaultLogger, NativeConnection, Runtime, Worker } from "@temporalio/worker";
import { runAsScript } from "./machine.js";

export interface FloorJob {
  readonly address: string;
  readonly temporalPid: number;
  readonly count: number;
  readonly rate: number;
}

export interface FloorShape {
  readonly shape: string;
  readonly workflows: number;
  readonly seconds: number;
  readonly serverCpuMs: number;
  readonly workerCpuMs: number;
  /** Start → result. */
  readonly p50Ms: number;
  /** The start call alone (what an API that starts a workflow per request waits for). */
  readonly startP50Ms: number;
  readonly startP99Ms: number;
}

export const FLOOR_SHAPES = ["floorEmpty", "floorOneActivity", "floorTwoActivities", "floorTwoLocalActivities"] as const;
const TASK_QUEUE = "bench-floor";
const FLOOR_TIMEOUT_MS = 120_000;

function ticks(pid: number | "self"): number {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? "{}") as FloorJob;
  setTimeout(() => {
    process.stderr.write("outbound-floor: hard time limit reached\n");
    process.exit(3);
  }, FLOOR_TIMEOUT_MS * (FLOOR_SHAPES.length + 2)).unref();
  Runtime.install({ logger: new DefaultLogger("WARN") });
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: job.address }),
    taskQueue: TASK_QUEUE,
    workflowsPath: resolve("bench/outbound-floor-workflow.ts"),
    activities: { one: async () => 1, two: async () => 2 },
  });
  const running = worker.run();
  const client = new Client({ connection: await Connection.connect({ address: job.address }) });
  const tag = Date.now().toString(36);
  const run = async (shape: string, round: string): Promise<FloorShape> => {
    const server0 = ticks(job.temporalPid);
    const self0 = ticks("self");
    const started = performance.now();
    const durations: number[] = [];
    const starts: number[] = [];
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < job.count; i++) {
      const wait = started + (i * 1000) / job.rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const at = performance.now();
      pending.push(
        client.workflow
          .start(shape, { taskQueue: TASK_QUEUE, workflowId: `bench-floor-${tag}-${round}-${shape}-${i}`, args: [String(i)], workflowExecutionTimeout: "2m" })
          .then((handle) => {
            starts.push(performance.now() - at);
            return handle.result();
          })
          .then(() => durations.push(performance.now() - at)),
      );
    }
    await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, FLOOR_TIMEOUT_MS))]);
    const seconds = (performance.now() - started) / 1000;
    durations.sort((a, b) => a - b);
    starts.sort((a, b) => a - b);
    return {
      shape,
      workflows: durations.length,
      seconds,
      serverCpuMs: ((ticks(job.temporalPid) - server0) * 10) / Math.max(1, durations.length),
      workerCpuMs: ((ticks("self") - self0) * 10) / Math.max(1, durations.length),
      p50Ms: durations[Math.floor(durations.length / 2)] ?? Number.NaN,
      startP50Ms: starts[Math.floor(starts.length / 2)] ?? Number.NaN,
      startP99Ms: starts[Math.min(starts.length - 1, Math.ceil(starts.length * 0.99) - 1)] ?? Number.NaN,
    };
  };
  const results: FloorShape[] = [];
  await run("floorTwoActivities", "warm");
  for (const shape of FLOOR_SHAPES) results.push(await run(shape, "measured"));
  worker.shutdown();
  await running;
  process.stdout.write(`${JSON.stringify(results)}\n`, () => process.exit(0));
}

runAsScript(import.meta.url, "outbound-floor", main);
