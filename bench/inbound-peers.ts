// The peers of the inbound benchmark, on this machine with their queues on the same disk as our PostgreSQL:
//
// Postfix (Debian's package): a throwaway instance with its own config, queue and data directories under the
// run's temp dir, smtpd on 127.0.0.1:<port>, the bench domain in mydestination and every recipient accepted
// (local_recipient_maps empty), delivered by the discard transport. Postfix answers 250 to the final dot only once
// cleanup has written and fsynced the queue file, so what is measured is its durable acceptance; qmgr and discard
// then deliver (and delete) each message, as our processor stores each. Connection limits are lifted (no anvil
// limits, 1,200 processes) so 100 parallel sessions and 1,000 idle ones are served; everything else is default.
//
// Haraka 3.3.4 (npm, installed into .tools/haraka-3.3.4, not the project's package.json), single process
// (nodes=1), on 127.0.0.1:<port>, with three plugins: bench_rdns (answers the reverse lookup with "localhost", as
// our server skips it and DNS here is not reachable), rcpt_to.in_host_list (the bench domain) and bench_fsync_queue,
// our queue plugin: each message is written to its own file, fsynced and closed before `next(OK)`, so the 250
// comes after the message is on disk (Haraka's own queue plugins forward or discard; discard would not be durable).
// Log level WARN (our server logs at error in the bench).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { chmod, chown, copyFile, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import type { Teardown } from "./stack.js";

const run = promisify(execFile);

export const HARAKA_VERSION = "3.3.4";
const HARAKA_DIR = resolve(process.env["BENCH_HARAKA_DIR"] || `.tools/haraka-${HARAKA_VERSION}`);
/** Versions the registry here serves that Haraka's ranges accept (its newest picks are not all there). */
const HARAKA_OVERRIDES = { libmime: "5.4.4", libqp: "2.1.1", "encoding-japanese": "2.4.0" };

export interface PeerServer {
  readonly name: string;
  readonly port: number;
  /** The processes whose CPU and memory are the server's (Postfix: master and all its children). */
  pids(): number[];
  /** The parent that reaps the server's short-lived processes (their CPU then shows in its cutime), if any. */
  reaper(): number | undefined;
  /** Messages accepted but not yet delivered (Postfix's queue); 0 when the server keeps no such backlog. */
  backlog(): Promise<number>;
  stop(): Promise<void>;
}

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
  for (const entry of readdirSyncSafe("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = ppidOf(Number(entry));
    if (ppid !== undefined) parentOf.set(Number(entry), ppid);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of parentOf) if (parent === tree[i]) tree.push(child);
  }
  return tree;
}

function readdirSyncSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
function ppidOf(pid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

export function havePostfix(): boolean {
  return existsSync("/usr/sbin/postfix") && existsSync("/usr/lib/postfix/sbin/master");
}

export async function startPostfix(workDir: string, port: number, domain: string, teardown: Teardown): Promise<PeerServer> {
  const base = join(workDir, "postfix");
  const etc = join(base, "etc");
  const spool = join(base, "spool");
  const data = join(base, "data");
  await mkdir(etc, { recursive: true });
  await mkdir(spool, { recursive: true });
  await mkdir(data, { recursive: true });
  await chmod(base, 0o755);
  const { uid, gid } = await userIds("postfix");
  await chown(data, uid, gid);
  const mainCf = `
compatibility_level = 3.6
queue_directory = ${spool}
data_directory = ${data}
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
shlib_directory = /usr/lib/postfix
meta_directory = /etc/postfix
mail_owner = postfix
setgid_group = postdrop
myhostname = postfix-bench.localhost
mydomain = localhost
mydestination = ${domain}
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
local_recipient_maps =
local_transport = discard:bench
default_transport = discard:bench
relay_transport = discard:bench
alias_maps =
alias_database =
smtp_host_lookup = native
disable_dns_lookups = yes
smtpd_client_connection_count_limit = 0
smtpd_client_connection_rate_limit = 0
smtpd_client_message_rate_limit = 0
default_process_limit = 1200
message_size_limit = 10485760
maillog_file = ${data}/maillog
maillog_file_prefixes = ${base}
`;
  // Debian's master.cf without chroot, smtpd on the bench port, and only the services a local discard needs.
  const masterCf = `
127.0.0.1:${port} inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`;
  await writeFile(join(etc, "main.cf"), mainCf);
  await writeFile(join(etc, "master.cf"), masterCf);
  const postfix = (command: string) => run("/usr/sbin/postfix", ["-c", etc, command]);
  const stop = async () => {
    await postfix("stop").catch(() => undefined);
    const until = Date.now() + 15_000;
    while (masterPid() !== undefined && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    if (masterPid() !== undefined) await postfix("abort").catch(() => undefined);
  };
  const masterPid = (): number | undefined => {
    try {
      const pid = Number(readFileSync(join(spool, "pid", "master.pid"), "utf8").trim());
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  };
  try {
    await postfix("start");
  } catch (e) {
    const log = await readFile(join(data, "maillog"), "utf8").catch(() => "(no maillog)");
    throw new Error(`postfix start failed: ${(e as Error).message}\n${log.split("\n").slice(-10).join("\n")}`);
  }
  teardown.add(stop);
  await waitForPort("127.0.0.1", port, 20_000);
  return {
    name: "Postfix",
    port,
    pids: () => {
      const pid = masterPid();
      return pid === undefined ? [] : processTree(pid);
    },
    reaper: masterPid,
    backlog: async () => {
      let n = 0;
      for (const queue of ["maildrop", "incoming", "active", "deferred", "hold"]) n += await countFiles(join(spool, queue));
      return n;
    },
    stop,
  };
}

async function countFiles(dir: string): Promise<number> {
  let n = 0;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    n += entry.isDirectory() ? await countFiles(join(dir, entry.name)) : 1;
  }
  return n;
}

async function userIds(name: string): Promise<{ uid: number; gid: number }> {
  const line = (await readFile("/etc/passwd", "utf8")).split("\n").find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no ${name} user: is Debian's postfix package installed?`);
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/** Installs Haraka into HARAKA_DIR once (npm, its own package.json); returns the path of bin/haraka. */
export async function ensureHaraka(log: (line: string) => void): Promise<string> {
  const bin = join(HARAKA_DIR, "node_modules", "Haraka", "bin", "haraka");
  if (existsSync(bin)) return bin;
  log(`installing Haraka ${HARAKA_VERSION} into ${HARAKA_DIR} …`);
  await mkdir(HARAKA_DIR, { recursive: true });
  await writeFile(
    join(HARAKA_DIR, "package.json"),
    JSON.stringify({ name: "haraka-bench-peer", private: true, dependencies: { Haraka: HARAKA_VERSION }, overrides: HARAKA_OVERRIDES }, null, 2),
  );
  await run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: HARAKA_DIR, maxBuffer: 16 * 1024 * 1024 });
  if (!existsSync(bin)) throw new Error(`Haraka did not install into ${HARAKA_DIR}`);
  return bin;
}

const RDNS_PLUGIN = `// Answers the reverse lookup at once: the bench client is 127.0.0.1, and DNS is not part of what is measured.
exports.hook_lookup_rdns = function (next) { next(OK, 'localhost') }
`;

const FSYNC_QUEUE_PLUGIN = `// Durable acceptance for the benchmark: the message goes to its own file, fsynced and closed before OK (250).
const fs = require('node:fs')
const path = require('node:path')
exports.register = function () {
  this.dir = path.join(process.env.HARAKA || '.', 'queue')
  fs.mkdirSync(this.dir, { recursive: true })
}
exports.hook_queue = function (next, connection) {
  const txn = connection.transaction
  txn.message_stream.get_data((data) => {
    const file = path.join(this.dir, txn.uuid)
    fs.open(file, 'wx', (err, fd) => {
      if (err) return next(DENYSOFT, 'queue open failed')
      fs.write(fd, data, 0, data.length, null, (err) => {
        if (err) return fs.close(fd, () => next(DENYSOFT, 'queue write failed'))
        fs.fsync(fd, (err) => {
          fs.close(fd, () => (err ? next(DENYSOFT, 'queue fsync failed') : next(OK, 'queued ' + txn.uuid)))
        })
      })
    })
  })
}
`;

export async function startHaraka(
  workDir: string,
  port: number,
  domain: string,
  log: (line: string) => void,
  teardown: Teardown,
): Promise<PeerServer> {
  const bin = await ensureHaraka(log);
  const dir = join(workDir, "haraka");
  await mkdir(join(dir, "config"), { recursive: true });
  await mkdir(join(dir, "plugins"), { recursive: true });
  const files: Record<string, string> = {
    "config/smtp.ini": `listen=127.0.0.1:${port}\nnodes=\ninactivity_timeout=300\n`,
    "config/plugins": "bench_rdns\nrcpt_to.in_host_list\nbench_fsync_queue\n",
    "config/host_list": `${domain}\n`,
    "config/me": "haraka-bench.localhost\n",
    "config/log.ini": "[main]\nlevel=WARN\ntimestamps=true\nformat=DEFAULT\n",
    "plugins/bench_rdns.js": RDNS_PLUGIN,
    "plugins/bench_fsync_queue.js": FSYNC_QUEUE_PLUGIN,
  };
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  // Haraka's own defaults for the session (greeting, line lengths, limits): `haraka -i` copies this one too.
  await copyFile(join(bin, "..", "..", "config", "connection.ini"), join(dir, "config", "connection.ini"));
  const child: ChildProcess = spawn(process.execPath, [bin, "-c", dir], {
    env: { ...process.env, HARAKA: dir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const tail: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      tail.push(...chunk.split("\n").filter((l) => l.trim() !== ""));
      tail.splice(0, Math.max(0, tail.length - 30));
    });
  }
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    const escalate = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(escalate);
  };
  teardown.add(stop);
  try {
    await waitForPort("127.0.0.1", port, 30_000);
  } catch (e) {
    throw new Error(`Haraka did not start: ${(e as Error).message}\n${tail.join("\n")}`);
  }
  return { name: "Haraka", port, pids: () => (child.pid ? processTree(child.pid) : []), reaper: () => undefined, backlog: async () => 0, stop };
}

/** Size of a directory tree in bytes (to check a peer really wrote what it accepted). */
export async function treeBytes(dir: string): Promise<number> {
  let n = 0;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    n += entry.isDirectory() ? await treeBytes(path) : (await stat(path)).size;
  }
  return n;
}
