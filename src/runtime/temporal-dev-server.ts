// A local Temporal server (`temporal server start-dev`) for when no TEMPORAL_ADDRESS is configured.
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { Connection } from "@temporalio/client";
import { registerSearchAttributes, type SearchAttributeType } from "../temporal/search-attributes.js";
import { findFreePort, isPortFree } from "./free-port.js";
import { claimEmbeddedServer } from "./leftovers.js";
import type { StopStep } from "./watchdog.js";

export interface TemporalDevServerOptions {
  /** The `temporal` binary, see ensureTemporalCli. */
  readonly cliPath: string;
  /** Persists state in `<dataDir>/temporal/temporal.db`; in memory when omitted. */
  readonly dataDir?: string;
  /** Frontend gRPC port; a free one is picked when omitted. */
  readonly port?: number;
  /** Web UI port; a free one is picked when omitted or 0, and when this one is taken (see uiUrl). */
  readonly uiPort?: number;
  /** Run without the Web UI. */
  readonly headless?: boolean;
  /** Created at start when missing; defaults to "default". */
  readonly namespace?: string;
  /** Registered in the namespace on every start, so an existing database also gets attributes added later. */
  readonly searchAttributes?: Readonly<Record<string, SearchAttributeType>>;
  /** Receives the server's output; discarded when omitted. */
  readonly log?: (line: string) => void;
  /** Added to the server's environment (this process's otherwise), such as GOGC for its Go garbage collector. */
  readonly env?: Readonly<Record<string, string>>;
  /** How a free loopback port is picked (tests make it pick a taken one); findFreePort when omitted. */
  readonly pickFreePort?: () => Promise<number>;
}

export interface RunningTemporal {
  /** host:port of the frontend. */
  readonly address: string;
  /** null when headless. */
  readonly uiUrl: string | null;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;
/**
 * Starts tried when a port picked free was taken by the time the server bound it. A free port is only free when
 * picked: on a busy machine another process (or an outgoing connection's local port) can take it first, and the
 * server also picks ports of its own (its internal services') the same way.
 */
const PORT_ATTEMPTS = 3;
const STOP_TIMEOUT_MS = 10_000;
const LOG_TAIL_LINES = 50;
/** How long a failed start waits for the rest of the server's output before reading its log tail. */
const OUTPUT_WAIT_MS = 2_000;
/** Its own clean shutdown, then SIGKILL. */
const STOP_STEPS: readonly StopStep[] = [
  { signal: "SIGTERM", waitMs: STOP_TIMEOUT_MS },
  { signal: "SIGKILL", waitMs: 5_000 },
];

export async function startTemporalDevServer(opts: TemporalDevServerOptions): Promise<RunningTemporal> {
  const taken = new Set<number>();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts, taken);
    } catch (err) {
      const port = err instanceof PortTaken ? err.port : undefined;
      // A port the caller asked for stays taken; one we (or the server) picked is picked again.
      if (port === undefined || port === opts.port || attempt === PORT_ATTEMPTS) throw err;
      taken.add(port);
      process.stderr.write(`Temporal dev server: port ${port} was taken as it started; starting again on other ports\n`);
    }
  }
}

/** The server exited because a port it was to listen on was taken. */
class PortTaken extends Error {
  constructor(
    message: string,
    readonly port: number,
    options: ErrorOptions,
  ) {
    super(message, options);
  }
}

const PORT_TAKEN = /listen(?:ing)? tcp [\d.:[\]]+:(\d+): bind: address already in use/;

async function startOnce(opts: TemporalDevServerOptions, taken: ReadonlySet<number>): Promise<RunningTemporal> {
  const namespace = opts.namespace ?? "default";
  const dbFile = opts.dataDir === undefined ? undefined : join(opts.dataDir, "temporal", "temporal.db");
  // Before choosing ports: a server left running by a killed run may hold the Web UI port.
  const claim = await claimEmbeddedServer(
    {
      name: "the Temporal dev server",
      stopSteps: STOP_STEPS,
      state: dbFile === undefined ? undefined : { dataDir: opts.dataDir!, recordName: "temporal", marker: dbFile },
    },
    undefined,
    (line) => process.stderr.write(`Temporal dev server: ${line}\n`),
  );
  const pickFreePort = async (): Promise<number> => {
    for (let i = 0; i < 10; i++) {
      const port = await (opts.pickFreePort ?? findFreePort)();
      if (!taken.has(port)) return port;
    }
    return findFreePort();
  };
  const port = opts.port ?? (await pickFreePort());
  // Another instance on this machine may hold the configured UI port; the UI is a convenience, so take another.
  const uiPort = opts.headless
    ? null
    : opts.uiPort && !taken.has(opts.uiPort) && (await isPortFree(opts.uiPort))
      ? opts.uiPort
      : await pickFreePort();
  const httpPort = await pickFreePort();
  const address = `127.0.0.1:${port}`;
  const args = ["server", "start-dev", "--ip", "127.0.0.1", "--port", String(port), "--http-port", String(httpPort), "--namespace", namespace];
  args.push(...(uiPort === null ? ["--headless"] : ["--ui-port", String(uiPort)]));
  if (dbFile !== undefined) {
    await mkdir(dirname(dbFile), { recursive: true });
    args.push("--db-filename", dbFile);
  }
  args.push("--log-level", "warn");
  // Measured with bench/outbound-floor.ts: the WAL journal with normal syncs (still durable across a process crash)
  // and activities handed straight to the worker that completes the workflow task cut the server's CPU per delivery
  // workflow by a third. Embedded defaults only: a TEMPORAL_ADDRESS cluster is used as it is configured.
  args.push("--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal");
  args.push("--dynamic-config-value", "system.enableActivityEagerExecution=true");

  const child = spawn(opts.cliPath, args, { stdio: ["ignore", "pipe", "pipe"], ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}) });
  if (child.pid !== undefined) await claim.started(child.pid);
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
  // 'close' comes after 'exit' once its output is read to the end: the log tail is whole only then.
  const outputRead = new Promise<void>((resolve) => child.on("close", () => resolve()));
  const exited = new Promise<void>((resolve) =>
    child.on("exit", (code, signal) => {
      exitReason = signal === null ? `exited with code ${code}` : `killed by ${signal}`;
      resolve();
    }),
  );
  const isRunning = (): boolean => exitReason === undefined;

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (isRunning()) {
        child.kill("SIGTERM");
        const escalate = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(escalate);
      }
      await claim.release();
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
    // Bounded: a process the server left behind could hold its output open.
    await Promise.race([outputRead, new Promise((resolve) => setTimeout(resolve, OUTPUT_WAIT_MS).unref())]);
    const message = `Temporal dev server (${opts.cliPath}) failed: ${reason}\n${tail.join("\n")}`;
    const takenPort = tail.map((line) => PORT_TAKEN.exec(line)?.[1]).find((p) => p !== undefined);
    if (takenPort !== undefined) throw new PortTaken(message, Number(takenPort), { cause: err });
    throw new Error(message, { cause: err });
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
