// The smtp role as a real child process (`mailbox serve --role smtp`) on the test run's PostgreSQL and Temporal, for
// the app's task queue and managed domain: tests that kill it or read its memory from /proc.
import { inject } from "vitest";
import type { TestApp } from "./harness.js";
import { serveRole, type RoleProcess } from "./role-process.js";

export type SmtpProcess = RoleProcess & { readonly port: number };

/** Starts `mailbox serve --role smtp`; resolves once it listens. */
export async function serveSmtp(app: TestApp, dataDir: string, env: Record<string, string> = {}): Promise<SmtpProcess> {
  const role = await serveRole("smtp", {
    DATABASE_URL: inject("databaseUrl"),
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_TASK_QUEUE: app.config.temporalTaskQueue,
    MANAGED_DOMAIN: app.config.managedDomain,
    DATA_DIR: dataDir,
    ...env,
  });
  return { ...role, port: role.smtpPort! };
}
