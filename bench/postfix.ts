// A throwaway instance of Debian's Postfix for the benchmarks' peers: its own config, queue and data directories
// under the run's temp dir, smtpd on 127.0.0.1:<port> only, no chroot, no DNS, no anvil limits, 10 MB messages,
// its log in its data directory. What it does with the mail (discard it, relay it) is the caller's part of main.cf.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { chmod, chown, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureDebianPackage } from "../test/support/debian-package.js";
import { processTree, waitForPort } from "./processes.js";
import type { Teardown } from "./stack.js";

const run = promisify(execFile);
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 15_000;

export interface PostfixInstance {
  readonly port: number;
  /** Master and all its children. */
  pids(): number[];
  /** Postfix's master: it reaps its short-lived children (their CPU then shows in its cutime). */
  masterPid(): number | undefined;
  /** Queue files not delivered yet (maildrop, incoming, active, deferred, hold). */
  backlog(): Promise<number>;
  stop(): Promise<void>;
  version(): string;
}

export interface PostfixRole {
  /** main.cf lines after the common ones (a later line wins). */
  readonly mainCf: string;
  /** master.cf services beside the common ones (smtpd on the port, queue manager, cleanup, discard, …). */
  readonly services?: string;
}

/** What the benchmarks run of Debian's postfix package: the daemons, and the load generator and sink of its tools. */
const POSTFIX_FILES = ["/usr/sbin/postfix", "/usr/lib/postfix/sbin/master", "/usr/sbin/smtp-source", "/usr/sbin/smtp-sink"];

/**
 * Installs Debian's postfix unless it is there, as the tests install clamd: no configuration of the machine's own
 * (the benchmarks run throwaway instances with theirs), no service started.
 */
export function ensurePostfix(log: (line: string) => void): Promise<void> {
  return ensureDebianPackage({ name: "postfix", files: POSTFIX_FILES, preseed: ["postfix postfix/main_mailer_type select No configuration"] }, log);
}

export async function startPostfixInstance(workDir: string, port: number, role: PostfixRole, teardown: Teardown): Promise<PostfixInstance> {
  const base = join(workDir, "postfix");
  const etc = join(base, "etc");
  const spool = join(base, "spool");
  const data = join(base, "data");
  for (const dir of [etc, spool, data]) await mkdir(dir, { recursive: true });
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
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
local_recipient_maps =
alias_maps =
alias_database =
smtp_host_lookup = native
disable_dns_lookups = yes
smtpd_client_connection_count_limit = 0
smtpd_client_connection_rate_limit = 0
smtpd_client_message_rate_limit = 0
message_size_limit = 10485760
maillog_file = ${data}/maillog
maillog_file_prefixes = ${base}
${role.mainCf.trim()}
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
${(role.services ?? "").trim()}
`;
  await writeFile(join(etc, "main.cf"), mainCf);
  await writeFile(join(etc, "master.cf"), masterCf);
  const postfix = (command: string) => run("/usr/sbin/postfix", ["-c", etc, command]);
  const masterPid = (): number | undefined => {
    try {
      const pid = Number(readFileSync(join(spool, "pid", "master.pid"), "utf8").trim());
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  };
  const stop = async () => {
    await postfix("stop").catch(() => undefined);
    const until = Date.now() + STOP_TIMEOUT_MS;
    while (masterPid() !== undefined && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    if (masterPid() !== undefined) await postfix("abort").catch(() => undefined);
  };
  try {
    await postfix("start");
  } catch (e) {
    const log = await readFile(join(data, "maillog"), "utf8").catch(() => "(no maillog)");
    throw new Error(`postfix start failed: ${(e as Error).message}\n${log.split("\n").slice(-10).join("\n")}`);
  }
  teardown.add(stop);
  await waitForPort("127.0.0.1", port, START_TIMEOUT_MS);
  const version = await run("/usr/sbin/postconf", ["-d", "-h", "mail_version"]).then(
    (r) => r.stdout.trim(),
    () => "unknown",
  );
  return {
    port,
    pids: () => {
      const pid = masterPid();
      return pid === undefined ? [] : processTree(pid);
    },
    masterPid,
    backlog: async () => {
      let n = 0;
      for (const queue of ["maildrop", "incoming", "active", "deferred", "hold"]) n += await countFiles(join(spool, queue));
      return n;
    },
    stop,
    version: () => version,
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
  if (!line) throw new Error(`no ${name} user: is Debian's postfix package installed? (apt-get install -y postfix)`);
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}
