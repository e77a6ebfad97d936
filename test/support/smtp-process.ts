// The smtp role as a real child process (`mailbox serve --role smtp`) on the test run's PostgreSQL and Temporal, for
// tests that kill it or read its memory from /proc.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { inject } from "vitest";
import type { TestApp } from "./harness.js";

export interface SmtpProcess {
  readonly child: ChildProcess;
  readonly port: number;
  /** The URL of its status port, when STATUS_PORT is set. */
  readonly status: string | null;
  /** Resident set size of the process now, in bytes (VmRSS). */
  rss(): Promise<number>;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Sends the signal and waits for the exit; resolves with the signal or code it ended with. */
  kill(signal?: NodeJS.Signals): Promise<NodeJS.Signals | number | null>;
}

/** Starts `mailbox serve --role smtp` for the app's task queue and managed domain; resolves once it listens. */
export async function serveSmtp(app: TestApp, dataDir: string, env: Record<string, string> = {}): Promise<SmtpProcess> {
  const child = spawn(process.execPath, ["src/cli/mailbox.js", "serve", "--role", "smtp"], {
    env: {
      ...process.env,
      DATABASE_URL: inject("databaseUrl"),
      TEMPORAL_ADDRESS: inject("temporalAddress"),
      TEMPORAL_TASK_QUEUE: app.config.temporalTaskQueue,
      MANAGED_DOMAIN: app.config.managedDomain,
      SMTP_PORT: "0",
      DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  const summary = await new Promise<{ smtp: string; status: string | null; roles: string[] }>((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      const line = stdout.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line));
    });
    void exited.then(([code]) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  if (summary.roles.join() !== "smtp") throw new Error(`serve started ${summary.roles.join()}`);
  return {
    child,
    port: Number(summary.smtp.split(":").pop()),
    status: summary.status,
    async rss() {
      const status = await readFile(`/proc/${child.pid}/status`, "utf8");
      return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
    },
    stderr: () => stderr,
    async kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const [code, ended] = await exited;
      return ended ?? code;
    },
  };
}
