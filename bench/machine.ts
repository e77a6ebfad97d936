// What a benchmark record says about where and on what it ran: the revision and the machine's load.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

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
