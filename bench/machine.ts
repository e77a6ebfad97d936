// What a benchmark record says about where and on what it ran: the revision and the machine's load.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, cpus, totalmem } from "node:os";

/** /proc/loadavg: the 1, 5 and 15 minute load averages. */
export function loadAverage(): [number, number, number] {
  const [a, b, c] = readFileSync("/proc/loadavg", "utf8").split(" ").map(Number);
  return [a!, b!, c!];
}

/** BENCH_REVISION, else `git describe --always --dirty`. */
export function revision(): string {
  if (process.env["BENCH_REVISION"]) return process.env["BENCH_REVISION"];
  try {
    return execFileSync("git", ["describe", "--always", "--dirty"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "unknown";
  }
}

/** Waits up to `maxS` for the 1-minute load average to drop below `quietLoad`; returns the load average then. */
export async function waitForQuietLoad(quietLoad: number, maxS: number, log: (line: string) => void): Promise<number> {
  const started = performance.now();
  let announced = false;
  while (loadAverage()[0] >= quietLoad && performance.now() - started < maxS * 1000) {
    if (!announced) log(`load average ${loadAverage()[0].toFixed(2)} ≥ ${quietLoad}: waiting up to ${maxS} s for it to drop …`);
    announced = true;
    await new Promise((r) => setTimeout(r, 5000));
  }
  return loadAverage()[0];
}

/** The machine a record was made on. */
export function machineFacts(): { cores: number; cpu: string; memoryGb: number; node: string } {
  return { cores: availableParallelism(), cpu: cpus()[0]?.model ?? "unknown CPU", memoryGb: Math.round(totalmem() / 2 ** 30), node: process.version };
}
