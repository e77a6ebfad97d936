// One role as a real child process (`mailbox serve --role …`), as operators run it on many machines: its summary
// line (where it listens), its stderr, its memory, and signals. The environment is the caller's: no default reaches
// the test run's own PostgreSQL or Temporal unless the caller passes them.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { seedSmtpTls } from "./smtp-tls-seed.js";

export type RoleName = "api" | "smtp" | "worker";

export interface RoleProcess {
  readonly child: ChildProcess;
  readonly role: RoleName;
  /** `http://host:port` of the api role; undefined for others. */
  readonly api: string | undefined;
  /** The port of the smtp role's listener; undefined for others. */
  readonly smtpPort: number | undefined;
  /** `http://host:port` of /healthz, /readyz and /metrics when STATUS_PORT is set. */
  readonly status: string | undefined;
  /** Resident set size of the process now, in bytes (VmRSS). */
  rss(): Promise<number>;
  stderr(): string;
  /** Sends the signal (unless it ended already) and resolves with the exit code, or the signal it died of. */
  kill(signal?: NodeJS.Signals): Promise<NodeJS.Signals | number | null>;
}

interface Spawned {
  readonly child: ChildProcess;
  stderr(): string;
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
}

function spawnRole(role: RoleName, env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, ["src/cli/mailbox.js", "serve", "--role", role], {
    env: { ...process.env, HTTP_PORT: "0", SMTP_PORT: "0", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return { child, stderr: () => stderr, exited: once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]> };
}

/** Spawns the role and resolves once it has printed its summary (it listens and polls), or rejects with its stderr. */
export async function serveRole(role: RoleName, env: Record<string, string>): Promise<RoleProcess> {
  const hostname = env.SMTP_HOSTNAME ?? env.MANAGED_DOMAIN;
  if (role === "smtp" && env.DATA_DIR && hostname) await seedSmtpTls(env.DATA_DIR, hostname);
  const { child, stderr, exited } = spawnRole(role, env);
  let stdout = "";
  const summary = await new Promise<{ api: string | null; smtp: string | null; status: string | null; roles: string[] }>((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      const line = stdout.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line));
    });
    void exited.then(([code, signal]) => reject(new Error(`serve --role ${role} exited with ${code ?? signal}: ${stderr()}`)));
  });
  if (summary.roles.join() !== role) throw new Error(`serve --role ${role} started ${summary.roles.join()}`);
  return {
    child,
    role,
    api: summary.api ?? undefined,
    smtpPort: summary.smtp ? Number(summary.smtp.split(":").pop()) : undefined,
    status: summary.status ?? undefined,
    async rss() {
      const status = await readFile(`/proc/${child.pid}/status`, "utf8");
      return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
    },
    stderr,
    async kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const [code, ended] = await exited;
      return ended ?? code;
    },
  };
}

/** Runs `serve --role` expecting it to fail at start; resolves with its exit code and stderr. */
export async function serveRoleFailure(role: RoleName, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const { child, stderr, exited } = spawnRole(role, env);
  child.stdout!.resume();
  const [code] = await exited;
  return { code, stderr: stderr() };
}
