// The clamd client's protocol: addresses, the INSTREAM framing, clamd's answers, and what happens when the other
// end is not a working clamd. Scans against a real clamd are in test/e2e/attachment-scan.test.ts.
import { once } from "node:events";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { findFreePort } from "../../src/runtime/free-port.js";
import { ClamdAddressError, createClamdScanner, instreamFrames, parseClamdAddress, parseClamdAnswer } from "../../src/scanning/clamd.js";

describe("clamd addresses", () => {
  test.each([
    ["127.0.0.1:3310", { kind: "tcp", host: "127.0.0.1", port: 3310 }],
    ["clamav.internal:3310", { kind: "tcp", host: "clamav.internal", port: 3310 }],
    ["[::1]:3310", { kind: "tcp", host: "::1", port: 3310 }],
    ["unix:/run/clamav/clamd.ctl", { kind: "unix", path: "/run/clamav/clamd.ctl" }],
  ])("reads %s", (text, address) => {
    expect(parseClamdAddress(text)).toEqual(address);
  });

  test.each(["clamd", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "unix:relative/clamd.ctl", "tcp://127.0.0.1:3310"])("refuses %s", (text) => {
    expect(() => parseClamdAddress(text)).toThrow(ClamdAddressError);
  });
});

describe("the INSTREAM request", () => {
  test("is the NUL-terminated command, each chunk behind its big-endian length, and a zero length", () => {
    const frames = Buffer.concat(instreamFrames(Buffer.from("hello")));
    expect(frames).toEqual(Buffer.concat([Buffer.from("zINSTREAM\0"), Buffer.from([0, 0, 0, 5]), Buffer.from("hello"), Buffer.from([0, 0, 0, 0])]));
  });

  test("sends content larger than a chunk in 64 KiB chunks", () => {
    const frames = instreamFrames(Buffer.alloc(64 * 1024 + 1, 1));
    expect(frames.map((f) => f.byteLength)).toEqual([10, 4, 64 * 1024, 4, 1, 4]);
    expect(Buffer.from(frames[3]!)).toEqual(Buffer.from([0, 0, 0, 1]));
  });

  test("of empty content is the command and the terminator alone", () => {
    expect(Buffer.concat(instreamFrames(new Uint8Array(0)))).toEqual(Buffer.from("zINSTREAM\0\0\0\0\0"));
  });
});

describe("clamd's answers", () => {
  // Answers of clamd 1.4 to INSTREAM (clamd(8), and observed against Debian's clamav-daemon 1.4.6).
  test.each([
    ["stream: OK", { state: "clean" }],
    ["stream: Eicar-Test-Signature.UNOFFICIAL FOUND", { state: "infected", finding: "Eicar-Test-Signature.UNOFFICIAL" }],
    ["stream: Win.Test.EICAR_HDB-1 FOUND", { state: "infected", finding: "Win.Test.EICAR_HDB-1" }],
    ["stream: Heuristics.Limits.Exceeded.MaxFileSize FOUND", { state: "infected", finding: "Heuristics.Limits.Exceeded.MaxFileSize" }],
    ["INSTREAM size limit exceeded. ERROR", { state: "error", reason: "clamd: INSTREAM size limit exceeded." }],
    ["stream: Can't allocate memory ERROR", { state: "error", reason: "clamd: Can't allocate memory" }],
    ["UNKNOWN COMMAND", { state: "error", reason: 'clamd: unexpected answer "UNKNOWN COMMAND"' }],
    ["", { state: "error", reason: 'clamd: unexpected answer ""' }],
    ["stream: OK.", { state: "error", reason: 'clamd: unexpected answer "stream: OK."' }],
    ["stream:  FOUND", { state: "error", reason: 'clamd: unexpected answer "stream:  FOUND"' }],
    ["1: stream: OK", { state: "error", reason: 'clamd: unexpected answer "1: stream: OK"' }],
  ])("reads %j", (answer, verdict) => {
    expect(parseClamdAnswer(answer)).toEqual(verdict);
  });
});

describe("a clamd that does not answer properly", () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  });

  /** A loopback peer that accepts connections and then does what `peer` says, to stand for a broken clamd. */
  async function peer(onConnection: (socket: Socket) => void): Promise<number> {
    const server = createServer(onConnection);
    servers.push(server);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return (server.address() as AddressInfo).port;
  }

  const scanAt = (port: number, timeoutMs = 2000) =>
    createClamdScanner({ address: { kind: "tcp", host: "127.0.0.1", port }, timeoutMs }).scan(Buffer.from("content"), {
      filename: "a.txt",
      contentType: "text/plain",
    });

  test("is an error when nothing listens", async () => {
    const verdict = await scanAt(await findFreePort());
    expect(verdict).toMatchObject({ state: "error" });
    expect(verdict.state === "error" && verdict.reason).toMatch(/^clamd at 127\.0\.0\.1:\d+: connect ECONNREFUSED/);
  });

  test("is an error when the peer never answers", async () => {
    const port = await peer((socket) => socket.on("data", () => undefined));
    expect(await scanAt(port, 300)).toEqual({ state: "error", reason: `clamd at 127.0.0.1:${port}: no answer within 300 ms` });
  });

  test("is an error when the peer closes without answering", async () => {
    const port = await peer((socket) => socket.once("data", () => socket.end()));
    expect(await scanAt(port)).toEqual({ state: "error", reason: `clamd at 127.0.0.1:${port}: closed without an answer` });
  });

  test("is an error when the answer is cut before its NUL", async () => {
    const port = await peer((socket) => socket.once("data", () => socket.end("stream: OK")));
    expect(await scanAt(port)).toEqual({ state: "error", reason: `clamd at 127.0.0.1:${port}: an answer without its end: "stream: OK"` });
  });

  test("is an error when the unix socket does not exist", async () => {
    const verdict = await createClamdScanner({ address: { kind: "unix", path: "/nonexistent/clamd.ctl" }, timeoutMs: 1000 }).scan(Buffer.from("x"), {
      filename: "a.txt",
      contentType: "text/plain",
    });
    expect(verdict.state === "error" && verdict.reason).toMatch(/^clamd at unix:\/nonexistent\/clamd\.ctl: connect ENOENT/);
  });
});
