// A local Temporal server (`temporal server start-dev`) for when no TEMPORAL_ADDRESS is configured.
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { Connection } from "@temporalio/client";
import { registerSearchAttributes, type SearchAttributeType } from "../temporal/search-attributes.js";
import { findFreePort } from "./free-port.js";


export interface TemporalDevServerOptions {
  /** The `temporal` binary, see ensureTemporalCli. */
  readonly cliPath: string;
  /** Persists state in `<dataDir>/temporal/temporal.db`; in memory when omitted. */
  readonly dataDir?: string;
  /** Frontend gRPC port; a free one is picked when omitted. */
  readonly port?: number;
  /** Web UI port; a free one is picked when omitted. */
  readonly uiPort?: number;
  /** Run without the Web UI. */
  readonly headless?: boolean;
  /** Created at start when missing; defaults to "default". */
  readonly namespace?: string;
  /** Registered in the namespace on every start, so an existing database also gets attributes added later. */
  readonly searchAttributes?: Readonly<Record<string, SearchAttributeType>>;
  /** Receives the server's output; discarded when omitted. */
  readonly log?: (line: string) => void;
}

export interface RunningTemporal {
  /** host:port of the frontend. */
  readonly address: string;
  /** null when headless. */
  readonly uiUrl: string | null;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const LOG_TAIL_LINES = 50;
export async function startTemporalDevServer(opts: TemporalDevServerOptions): Promise<RunningTemporal> {
  const namespace = opts.namespace ?? "default";
  const port = opts.port ?? (await findFreePort());
  const uiPort = opts.headless ? null : (opts.uiPort ?? (await findFreePort()));
  const address = `127.0.0.1:${port}`;
  const args = ["server", "start-dev", "--ip", "127.0.0.1", "--port", String(port), "--namespace", namespace];
  args.push(...(uiPort === null ? ["--headless"] : ["--ui-port", String(uiPort)]));
  if (opts.dataDir !== undefined) {
    const dir = join(opts.dataDir, "temporal");
    await mkdir(dir, { recursive: true });
    args.push("--db-filename", join(dir, "temporal.db"));
  }
  args.push("--log-level", "warn");
  // Measured with bench/outbound-floor.ts: the WAL journal with normal syncs (still durable across a process crash)
  // and activities handed straight to the worker that completes the workflow task cut the server's CPU per delivery
  // workflow by a third. Embedded defaults only: a TEMPORAL_ADDRESS cluster is used as it is configured.
  args.push("--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal");
  args.push("--dynamic-config-value", "system.enableActivityEagerExecution=true");

  const child = spawn(opts.cliPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  const tail: string[] = [];
  for (const input of [child.stdout, child.stderr]) {
    createInterface({ input }).on("line", (line) => {
      tail.push(line);
      if (tail.length > LOG_TAIL_LINES) tail.shift();
      opts.log?.(line);
    });
  }
  let exitReason: string | undefined;
  child.on("error", (err) => {
    exitReason = err.message;
  });
  const exited = new Promise<void>((resolve) =>
    child.on("exit", (code, signal) => {
      exitReason = signal === null ? `exited with code ${code}` : `killed by ${signal}`;
      resolve();
    }),
  );
  const isRunning = (): boolean => exitReason === undefined;
  // The server does not notice its parent dying, so it goes down with this process (and shuts down on its own).
  const killOnExit = (): void => void child.kill("SIGTERM");
  process.on("exit", killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (isRunning()) {
        child.kill("SIGTERM");
        const escalate = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(escalate);
      }
      process.off("exit", killOnExit);
    })());

  try {
    const connection = await waitUntilServing(address, namespace, isRunning);
    try {
      await registerSearchAttributes(connection, namespace, opts.searchAttributes ?? {});
    } finally {
      await connection.close();
    }
  } catch (err) {
    const reason = exitReason ?? (err instanceof Error ? err.message : String(err));
    await stop();
    throw new Error(`Temporal dev server (${opts.cliPath}) failed: ${reason}\n${tail.join("\n")}`, { cause: err });
  }
  return { address, uiUrl: uiPort === null ? null : `http://127.0.0.1:${uiPort}`, stop };
}

// Ready means the namespace can be described, not merely that the port accepts connections.
async function waitUntilServing(address: string, namespace: string, isRunning: () => boolean): Promise<Connection> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!isRunning()) throw new Error("exited before serving");
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return connection;
      } catch (err) {
        await connection.close();
        throw err;
      }
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(`namespace "${namespace}" not served on ${address} within ${READY_TIMEOUT_MS / 1000} s`, { cause: err });
      }
      await sleep(200);
    }
  }
}
