// What a killed run left running in DATA_DIR. Each embedded server is recorded in `<dataDir>/run/<name>.json` with
// the process that started it (its owner). The next start in that directory stops a server whose owner is gone,
// refuses one whose owner still runs, and never signals a process it cannot prove is that server: the recorded
// start time must match (a reused pid has another) and the command line must name the server's own files.
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  commandLineOf,
  identityOf,
  isRunning,
  stopProcess,
  stopWithThisProcess,
  type ProcessIdentity,
  type StopStep,
} from "./watchdog.js";

export interface EmbeddedServer {
  /** For messages: "PostgreSQL", "the Temporal dev server". */
  readonly name: string;
  /** How to stop it cleanly, then less so. */
  readonly stopSteps: readonly StopStep[];
  /** Where a server that keeps state records itself; one without state is only stopped with this process. */
  readonly state?: {
    readonly dataDir: string;
    /** The record is `<dataDir>/run/<recordName>.json`. */
    readonly recordName: string;
    /** An argument of the server's command line (its data directory or database file): proof it is this server. */
    readonly marker: string;
  };
}

interface LeftoverRecord {
  readonly owner: ProcessIdentity;
  readonly server?: ProcessIdentity;
}

export interface Claim {
  /** Records the started server's pid and has it stopped should this process end before release(). */
  started(pid: number): Promise<void>;
  /** After an orderly stop (or a failed start): forgets the server. */
  release(): Promise<void>;
}

/**
 * Before a start: stops the server a run that has ended left running, then records this process as the owner.
 * `running` is a pid the server itself says it runs under (PostgreSQL's postmaster.pid), for a run killed before
 * it recorded the server. Throws when the server still runs for a live process, or when one runs that is not ours.
 */
export async function claimEmbeddedServer(
  server: EmbeddedServer,
  running: number | undefined,
  log: (line: string) => void,
): Promise<Claim> {
  const { state } = server;
  const file = state === undefined ? undefined : join(state.dataDir, "run", `${state.recordName}.json`);
  const record = file === undefined ? undefined : await readRecord(file);
  const recorded = record?.server !== undefined && isRunning(record.server) ? record.server : undefined;
  const candidate = recorded ?? (running === undefined ? undefined : identityOf(running));
  if (state !== undefined && candidate !== undefined && commandLineOf(candidate.pid).includes(state.marker)) {
    const where = `${server.name} (pid ${candidate.pid}) in ${state.marker}`;
    if (record === undefined || isRunning(record.owner)) {
      const owner = record === undefined ? "a process this service has no record of" : `pid ${record.owner.pid}, which still runs`;
      throw new Error(`${server.name} is already running in ${state.marker} (pid ${candidate.pid}), started by ${owner}`);
    }
    log(`stopping ${where}, left running by a run that ended (pid ${record.owner.pid})`);
    if (!(await stopProcess(candidate, server.stopSteps))) throw new Error(`${where}, left running by a run that ended, did not stop`);
  }

  const owner = identityOf(process.pid);
  if (owner === undefined) return { started: async () => undefined, release: async () => undefined }; // no /proc
  if (file !== undefined) await writeRecord(file, { owner });
  let unwatch: (() => void) | undefined;
  return {
    async started(pid) {
      const identity = identityOf(pid);
      if (identity === undefined) return;
      if (file !== undefined) await writeRecord(file, { owner, server: identity });
      unwatch = stopWithThisProcess(server.name, identity, server.stopSteps);
    },
    async release() {
      unwatch?.();
      if (file !== undefined) await rm(file, { force: true });
    },
  };
}

async function readRecord(file: string): Promise<LeftoverRecord | undefined> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as LeftoverRecord;
  } catch {
    return undefined; // none, or cut short by the kill that left it
  }
}

async function writeRecord(file: string, record: LeftoverRecord): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(record), { mode: 0o600 });
}
