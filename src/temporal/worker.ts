// The Temporal worker: every workflow of workflows/ and every activity, on one task queue.
import { fileURLToPath } from "node:url";
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundleOption } from "@temporalio/worker";
import type { Database } from "../db/database.js";
import { createInboxPurgeActivities } from "./activities/inbox-purge.js";

export const WORKFLOWS_PATH = fileURLToPath(new URL("../../workflows/index.ts", import.meta.url));

export function createActivities(deps: { db: Database }) {
  return { ...createInboxPurgeActivities(deps.db) };
}

export interface WorkerOptions {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly db: Database;
  /** A prebuilt bundle (tests share one); otherwise workflows/ is bundled at start. */
  readonly workflowBundle?: WorkflowBundleOption;
}

let runtimeInstalled = false;

export async function createWorker(options: WorkerOptions): Promise<Worker> {
  // The SDK logs every worker state change at INFO on stdout; keep its warnings and errors only. The runtime can be
  // installed once per process, before the first connection.
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger("WARN") });
    runtimeInstalled = true;
  }
  const connection = await NativeConnection.connect({ address: options.address });
  return Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: createActivities(options),
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
  });
}
