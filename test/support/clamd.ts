// A real clamd for the tests: Debian's clamav-daemon, installed here when missing, serving a local signature
// database that detects the EICAR test file (no signature download), on a unix socket and a loopback TCP port.
import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { findFreePort } from "../../src/runtime/free-port.js";
import { EICAR } from "../../src/scanning/builtin.js";
import { clamdVersion, parseClamdAddress } from "../../src/scanning/clamd.js";
import { ensureDebianPackage } from "./debian-package.js";

const CLAMD_PATH = "/usr/sbin/clamd";
/** The name clamd reports for the EICAR file; clamd appends `.UNOFFICIAL` to signatures of unsigned databases. */
export const EICAR_SIGNATURE = "Eicar-Test-Signature";
/** clamd's StreamMaxLength here: small, so that a test crosses it cheaply. */
export const CLAMD_STREAM_MAX_BYTES = 1024 * 1024;
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

/** What the global setup hands to test files: a running clamd's addresses, or why it could not start. */
export type ProvidedClamd = { readonly tcpAddress: string; readonly unixAddress: string; readonly version: string } | { readonly failure: string };

export interface RunningClamd {
  /** CLAMD_ADDRESS of the loopback TCP socket. */
  readonly tcpAddress: string;
  /** CLAMD_ADDRESS of the unix socket. */
  readonly unixAddress: string;
  /** clamd's version line, e.g. `ClamAV 1.4.6`. */
  readonly version: string;
  stop(): Promise<void>;
}

/** Installs Debian's clamav-daemon unless clamd is there (root only, as in CI); returns the clamd binary. */
export async function ensureClamd(log: (line: string) => void = () => undefined): Promise<string> {
  await ensureDebianPackage({ name: "clamav-daemon", files: [CLAMD_PATH] }, log);
  return CLAMD_PATH;
}

/** Starts clamd in the foreground under `dir` (signatures, configuration, socket, log) and waits until it answers. */
export async function startClamd(dir: string): Promise<RunningClamd> {
  const clamd = await ensureClamd();
  const databaseDir = join(dir, "db");
  await mkdir(databaseDir, { recursive: true });
  // An extended (.ndb) body signature: name, any file type (0), any offset (*), the EICAR bytes in hex.
  await writeFile(join(databaseDir, "eicar.ndb"), `${EICAR_SIGNATURE}:0:*:${EICAR.toString("hex")}\n`);
  const socketPath = join(dir, "clamd.sock");
  const logPath = join(dir, "clamd.log");
  const port = await findFreePort();
  const configPath = join(dir, "clamd.conf");
  await writeFile(
    configPath,
    [
      "Foreground yes",
      `DatabaseDirectory ${databaseDir}`,
      `LocalSocket ${socketPath}`,
      "TCPAddr 127.0.0.1",
      `TCPSocket ${port}`,
      `LogFile ${logPath}`,
      `StreamMaxLength ${CLAMD_STREAM_MAX_BYTES}`,
      "MaxThreads 4",
      "",
    ].join("\n"),
  );

  const child = spawn(clamd, ["--config-file", configPath], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString("utf8")).slice(-4000)));
  let exitReason: string | undefined;
  child.on("error", (e) => (exitReason = e.message));
  const exited = new Promise<void>((resolve) =>
    child.on("exit", (code, signal) => {
      exitReason = signal === null ? `exited with code ${code}` : `killed by ${signal}`;
      resolve();
    }),
  );
  // clamd does not notice its parent dying, so it goes down with this process.
  const killOnExit = (): void => void child.kill("SIGTERM");
  process.on("exit", killOnExit);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (exitReason === undefined) {
        child.kill("SIGTERM");
        const escalate = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(escalate);
      }
      process.off("exit", killOnExit);
    })());

  const tcpAddress = `127.0.0.1:${port}`;
  const unixAddress = `unix:${socketPath}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    try {
      const version = await clamdVersion({ address: parseClamdAddress(tcpAddress), timeoutMs: 2000 });
      await clamdVersion({ address: parseClamdAddress(unixAddress), timeoutMs: 2000 });
      return { tcpAddress, unixAddress, version, stop };
    } catch (e) {
      if (exitReason !== undefined || Date.now() > deadline) {
        await stop();
        const logTail = await readFile(logPath, "utf8").catch(() => "");
        throw new Error(`clamd did not start: ${exitReason ?? (e as Error).message}\n${stderr}\n${logTail.split("\n").slice(-20).join("\n")}`, {
          cause: e,
        });
      }
      await sleep(100);
    }
  }
}
