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
import { existsSync } from "node:fs";
import { copyFile, mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { startPostfixInstance } from "./postfix.js";
import { processTree, waitForPort } from "./processes.js";
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

export async function startPostfix(workDir: string, port: number, domain: string, teardown: Teardown): Promise<PeerServer> {
  // Every recipient of the bench domain accepted and discarded; 1,200 processes for 1,000 idle sessions.
  const postfix = await startPostfixInstance(
    workDir,
    port,
    {
      mainCf: `
myhostname = postfix-bench.localhost
mydomain = localhost
mydestination = ${domain}
local_transport = discard:bench
default_transport = discard:bench
relay_transport = discard:bench
default_process_limit = 1200
`,
    },
    teardown,
  );
  return { name: "Postfix", port, pids: postfix.pids, reaper: postfix.masterPid, backlog: postfix.backlog, stop: postfix.stop };
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
