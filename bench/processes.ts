// Processes, ports, memory and CPU ticks of a benchmark's stack and peers, read from /proc and loopback connects.
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";

/** Resolves once something accepts connections on host:port, or rejects after `timeoutMs`. */
export async function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((done) => {
      const socket = connect({ host, port }, () => {
        socket.destroy();
        done(true);
      });
      socket.on("error", () => done(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Direct and indirect children of `pid`, and `pid`. */
export function processTree(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of pidsInProc()) {
    const ppid = ppidOf(entry);
    if (ppid !== undefined) parentOf.set(entry, ppid);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of parentOf) if (parent === tree[i]) tree.push(child);
  }
  return tree;
}

/** The first process whose command line holds every one of `parts`. */
export function pidByCommandLine(parts: readonly string[]): number | undefined {
  for (const pid of pidsInProc()) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (parts.every((p) => cmdline.includes(p))) return pid;
    } catch {
      // gone
    }
  }
  return undefined;
}

function pidsInProc(): number[] {
  try {
    return readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number);
  } catch {
    return [];
  }
}

function ppidOf(pid: number): number | undefined {
  const fields = statAfterName(pid);
  return fields ? Number(fields[1]) : undefined;
}

/** VmRSS (or VmHWM, the peak) of a process in kB; 0 once it is gone. */
export function statusKb(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Proportional set size in kB (shared pages split among their processes), RSS where smaps_rollup is missing. */
export function pssKb(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
    return m ? Number(m[1]) : statusKb(pid);
  } catch {
    return 0;
  }
}

/** utime + stime of a live process; undefined once it is gone. */
export function processTicks(pid: number): number | undefined {
  const fields = statAfterName(pid);
  return fields ? Number(fields[11]) + Number(fields[12]) : undefined;
}

/** cutime + cstime: CPU of a process's children that exited and were reaped; 0 once it is gone. */
export function reapedTicks(pid: number | "self" = "self"): number {
  const fields = statAfterName(pid);
  return fields ? Number(fields[13]) + Number(fields[14]) : 0;
}

/** /proc/<pid>/stat from the field after the command name (state, ppid, …). */
function statAfterName(pid: number | "self"): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}
