// The smtp role as a real child process (`mailbox serve --role smtp`) on the app's database and the test run's
// Temporal, for the app's task queue and managed domain: tests that kill it or read its memory from /proc. Its
// sweeper adopts pending raw mail of the whole database: a file that runs one gives it a database of its own
// (test/support/file-database.ts).
import { inject } from "vitest";
import type { TestApp } from "./harness.js";
import { serveRole, type RoleProcess } from "./role-process.js";

export type SmtpProcess = RoleProcess & { readonly port: number };

/** Starts `mailbox serve --role smtp`; resolves once it listens. */
export async function serveSmtp(app: TestApp, dataDir: string, env: Record<string, string> = {}): Promise<SmtpProcess> {
  const role = await serveRole("smtp", {
    DATABASE_URL: app.config.databaseUrl!,
    TEMPORAL_ADDRESS: inject("temporalAddress"),
    TEMPORAL_TASK_QUEUE: app.config.temporalTaskQueue,
    MANAGED_DOMAIN: app.config.managedDomain,
    DATA_DIR: dataDir,
    ...env,
  });
  return { ...role, port: role.smtpPort! };
}
