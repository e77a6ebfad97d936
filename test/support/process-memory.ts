// The memory a service process takes, read from outside as an operator's tools would: its proportional set size
// (PSS: shared pages split among the processes that map them) and that of the PostgreSQL backends serving its
// connections, found by the ports of its sockets or by the application name its connections carry.
import { readdir, readFile, readlink, writeFile } from "node:fs/promises";
import type { SqlTx } from "../../src/db/database.js";

/** A "Field:   123 kB" line of a /proc file, in bytes; 0 when it is missing. */
function kilobytesField(text: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0) * 1024;
}

/** A process's memory in bytes (all its threads): PSS, and what it alone maps (USS); 0 once it is gone. */
export async function processMemory(pid: number): Promise<{ pss: number; private: number }> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, "utf8").catch(() => "");
  const kb = (field: string) => kilobytesField(rollup, field);
  return { pss: kb("Pss"), private: kb("Private_Clean") + kb("Private_Dirty") };
}

/**
 * A process's resident set size now and its highest since the last `resetResidentPeak` (VmRSS and VmHWM, in bytes;
 * 0 once it is gone). The kernel keeps both as counters: reading them costs microseconds, where smaps_rollup walks
 * every page table of the process (7–10 ms of CPU for a 550 MB Node process).
 */
export async function residentMemory(pid: number): Promise<{ now: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  return { now: kilobytesField(status, "VmRSS"), peak: kilobytesField(status, "VmHWM") };
}

/** Sets the process's VmHWM to its resident set now (proc(5): clear_refs); false when the kernel refuses. */
export async function resetResidentPeak(pid: number): Promise<boolean> {
  return writeFile(`/proc/${pid}/clear_refs`, "5").then(
    () => true,
    () => false,
  );
}

/**
 * The local ports of the process's TCP connections to `remotePort` (on loopback, the PostgreSQL server's port). Only
 * those: a connection elsewhere can share its local port number with another process's connection to PostgreSQL
 * (Linux reuses an ephemeral port for other destinations), whose backend would then be counted as this process's.
 */
async function localPortsTo(pid: number, remotePort: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    const socket = /^socket:\[(\d+)\]$/.exec(target);
    if (socket) inodes.add(socket[1]!);
  }
  const ports: number[] = [];
  for (const table of ["tcp", "tcp6"]) {
    const lines = (await readFile(`/proc/${pid}/net/${table}`, "utf8").catch(() => "")).split("\n").slice(1);
    for (const line of lines) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/);
      if (fields.length <= 9 || !inodes.has(fields[9]!)) continue;
      if (parseInt(fields[2]!.split(":")[1]!, 16) === remotePort) ports.push(parseInt(fields[1]!.split(":")[1]!, 16));
    }
  }
  return ports;
}

/**
 * The PostgreSQL backends serving the process, found by the ports of its sockets (`db` reads pg_stat_activity of the
 * same server). Exact whatever the process sets, but it reads the whole network namespace's TCP tables: ~5 ms of CPU
 * on a machine with many sockets.
 */
export async function backendPidsBySocket(pid: number, db: SqlTx): Promise<number[]> {
  const [{ port }] = (await db.query<{ port: number }>(`select current_setting('port')::int as port`)) as [{ port: number }];
  const ports = await localPortsTo(pid, port);
  const rows = await db.query<{ pid: number }>(`select pid from pg_stat_activity where client_port = any($1::int[]) order by pid`, [ports]);
  return rows.map((r) => r.pid);
}

/**
 * The PostgreSQL backends whose connections carry this application_name: those of a process started with it as
 * PGAPPNAME, which node-postgres gives every connection that does not name itself (one query; check it against
 * backendPidsBySocket once).
 */
export async function backendPidsByName(applicationName: string, db: SqlTx): Promise<number[]> {
  const rows = await db.query<{ pid: number }>(`select pid from pg_stat_activity where application_name = $1 order by pid`, [applicationName]);
  return rows.map((r) => r.pid);
}

/**
 * The whole service's memory: the process's PSS, and what the PostgreSQL backends of its connections (`backends`)
 * hold of their own now. A backend's PSS would also count its share of the shared buffers it touched, which the
 * server holds whoever touches them. Backends come and go with the process's pools, so this is a reading at one
 * moment, as an operator's would be.
 */
export async function serviceMemory(pid: number, backends: readonly number[]): Promise<{ process: number; backends: number }> {
  const [own, ...backendMemory] = await Promise.all([processMemory(pid), ...backends.map(processMemory)]);
  return { process: own!.pss, backends: backendMemory.reduce((sum, m) => sum + m.private, 0) };
}
