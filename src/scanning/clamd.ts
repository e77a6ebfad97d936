// A clamd client speaking the INSTREAM command of clamd(8): the content goes in length-prefixed chunks, clamd answers
// with one NUL-terminated line. Anything but a well-formed answer within the time allowed is an error verdict.
import { connect } from "node:net";
import type { ScanVerdict, Scanner } from "./scanner.js";

export type ClamdAddress =
  | { readonly kind: "tcp"; readonly host: string; readonly port: number }
  | { readonly kind: "unix"; readonly path: string };

export class ClamdAddressError extends Error {}

/** A failed exchange with clamd: no connection, a timeout, a closed connection or an answer that is not clamd's. */
export class ClamdError extends Error {}

/** Chunk size of the stream: clamd takes any size up to its StreamMaxLength; small chunks keep its buffers small. */
const CHUNK_BYTES = 64 * 1024;
/** clamd answers with one short line; anything longer is not clamd. */
const MAX_ANSWER_BYTES = 4096;
/** Connecting to a healthy clamd takes milliseconds; a longer wait means it is down or overloaded. */
const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/** Parses `host:port`, `[v6]:port` or `unix:/path/to/clamd.ctl` (the CLAMD_ADDRESS forms). */
export function parseClamdAddress(text: string): ClamdAddress {
  if (text.startsWith("unix:")) {
    const path = text.slice("unix:".length);
    if (!path.startsWith("/")) throw new ClamdAddressError(`a clamd unix socket must be an absolute path, got "${text}"`);
    return { kind: "unix", path };
  }
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([\w.-]+)):(\d{1,5})$/.exec(text);
  const port = Number(m?.[3]);
  if (!m || port < 1 || port > 65535) throw new ClamdAddressError(`a clamd address is host:port or unix:/path, got "${text}"`);
  return { kind: "tcp", host: m[1] ?? m[2]!, port };
}

function formatClamdAddress(address: ClamdAddress): string {
  if (address.kind === "unix") return `unix:${address.path}`;
  return address.host.includes(":") ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

/**
 * The verdict of clamd's answer to INSTREAM, without its NUL. clamd 1.x answers `stream: OK`,
 * `stream: <signature> FOUND`, `INSTREAM size limit exceeded. ERROR` or `<reason> ERROR`; anything else is a
 * protocol surprise and an error, never clean.
 */
export function parseClamdAnswer(answer: string): ScanVerdict {
  if (answer === "stream: OK") return { state: "clean" };
  const found = /^stream: (\S.*) FOUND$/.exec(answer);
  if (found) return { state: "infected", finding: found[1]! };
  if (answer.endsWith(" ERROR")) return { state: "error", reason: `clamd: ${answer.slice(0, -" ERROR".length).replace(/^stream: /, "")}` };
  return { state: "error", reason: `clamd: unexpected answer ${JSON.stringify(answer.slice(0, 200))}` };
}

export interface ClamdScannerOptions {
  readonly address: ClamdAddress;
  /** From connection to answer. */
  readonly timeoutMs: number;
  readonly connectTimeoutMs?: number;
}

export function createClamdScanner(options: ClamdScannerOptions): Scanner {
  return {
    async scan(content) {
      try {
        return parseClamdAnswer(await exchange(options, instreamFrames(content)));
      } catch (e) {
        if (e instanceof ClamdError) return { state: "error", reason: e.message };
        throw e;
      }
    },
  };
}

/** clamd's version line (`ClamAV 1.4.6/27000/…`); rejects with ClamdError when clamd does not answer. */
export function clamdVersion(options: ClamdScannerOptions): Promise<string> {
  return exchange(options, [command("VERSION")]);
}

/** `zINSTREAM\0`, then each chunk behind its 4-byte big-endian length, then a zero length that ends the stream. */
export function instreamFrames(content: Uint8Array): Uint8Array[] {
  const frames: Uint8Array[] = [command("INSTREAM")];
  for (let offset = 0; offset < content.byteLength; offset += CHUNK_BYTES) {
    const chunk = content.subarray(offset, offset + CHUNK_BYTES);
    frames.push(uint32(chunk.byteLength), chunk);
  }
  frames.push(uint32(0));
  return frames;
}

/** The `z` form: the command and clamd's answer are NUL-terminated, which tells a complete answer from a cut one. */
function command(name: string): Uint8Array {
  return Buffer.from(`z${name}\0`, "latin1");
}

function uint32(n: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** One connection per command: sends the frames, resolves to the answer without its NUL. */
function exchange(options: ClamdScannerOptions, frames: readonly Uint8Array[]): Promise<string> {
  const where = `clamd at ${formatClamdAddress(options.address)}`;
  const connectTimeoutMs = Math.min(options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, options.timeoutMs);
  return new Promise((resolve, reject) => {
    const { address } = options;
    const socket = address.kind === "unix" ? connect({ path: address.path }) : connect({ host: address.host, port: address.port });
    const received: Buffer[] = [];
    let receivedBytes = 0;
    let settled = false;
    let timer: NodeJS.Timeout;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      outcome();
    };
    const fail = (reason: string) => settle(() => reject(new ClamdError(`${where}: ${reason}`)));

    timer = setTimeout(() => fail(`no connection within ${connectTimeoutMs} ms`), connectTimeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(`no answer within ${options.timeoutMs} ms`), options.timeoutMs);
      // The content is already in memory and writes only queue references to it, so backpressure would buy nothing.
      socket.cork();
      for (const frame of frames) socket.write(frame);
      socket.uncork();
    });
    socket.on("data", (chunk: Buffer) => {
      received.push(chunk);
      receivedBytes += chunk.byteLength;
      const answer = Buffer.concat(received);
      const end = answer.indexOf(0);
      if (end === -1) {
        if (receivedBytes > MAX_ANSWER_BYTES) fail(`an answer longer than ${MAX_ANSWER_BYTES} bytes`);
        return;
      }
      if (end !== answer.byteLength - 1) return fail("more than one answer");
      settle(() => resolve(answer.subarray(0, end).toString("utf8")));
    });
    // clamd may answer (a size limit) and close while the stream is still being written: the answer, when it came
    // first, has settled already; otherwise the write error is the reason.
    socket.on("error", (e) => fail(e.message));
    socket.on("close", () =>
      fail(receivedBytes > 0 ? `an answer without its end: ${JSON.stringify(Buffer.concat(received).toString("utf8").slice(0, 200))}` : "closed without an answer"),
    );
  });
}
