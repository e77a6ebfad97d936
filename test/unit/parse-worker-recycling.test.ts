// The parser's threads after a large message, seen from outside as the system lists them (/proc/self/task): a worker
// that parsed a large message goes on warm with the next job that comes soon (a fresh thread's module load and cold
// mailparser cost more CPU than a 9 MB parse), and is ended once it has been idle a while, so that what it grew goes
// back to the system.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createEmailParser, PARSER_THREAD_NAME, type EmailParser, type RawChunks } from "../../src/mail/parse.js";

let parser: EmailParser;
beforeAll(() => {
  parser = createEmailParser({ timeoutMs: 20_000, memoryMb: 256, workers: 1, maxHeaderBytes: 64 * 1024, maxMimeParts: 100 });
});
afterAll(() => parser?.close());

/** A 2 MB message (a base64 attachment of 1.5 MB), past the size after which a worker is recycled. */
const LARGE = Buffer.from(
  `From: a@example.org\r\nSubject: large\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee the attachment\r\n` +
    `--b\r\nContent-Type: application/octet-stream; name=blob.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n` +
    `${randomBytes(1_500_000).toString("base64").replace(/.{76}/g, "$&\r\n")}\r\n--b--\r\n`,
);

/** The message as the processing side streams it: 256 KB chunks, each a buffer of its own. */
const streamed = (raw: Buffer): RawChunks => ({
  async *chunks() {
    for (let at = 0; at < raw.length; at += 256 * 1024) yield Buffer.from(raw.subarray(at, at + 256 * 1024));
  },
});

/** The ids of this process's parser threads. */
function parserThreads(): string[] {
  return readdirSync("/proc/self/task").filter((tid) => {
    try {
      return readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim() === PARSER_THREAD_NAME;
    } catch {
      return false; // ended meanwhile
    }
  });
}

test.runIf(process.platform === "linux")(
  "a worker that parsed a large message parses the next one warm, and is ended once idle, its memory going back",
  async () => {
    const first = await parser.parse(streamed(LARGE));
    expect(first.attachments[0]?.content.byteLength).toBe(1_500_000);
    const thread = parserThreads();
    expect(thread).toHaveLength(1);

    const second = await parser.parse(streamed(LARGE));
    expect(second.attachments[0]?.content.byteLength).toBe(1_500_000);
    expect(parserThreads()).toEqual(thread);

    // Ended after five seconds idle; polled, at most for 20 s.
    for (let i = 0; i < 200 && parserThreads().length > 0; i++) await sleep(100);
    expect(parserThreads()).toEqual([]);

    const third = await parser.parse(Buffer.from("From: a@example.org\r\nSubject: small\r\n\r\nhello\r\n"));
    expect(third.text).toBe("hello\n");
    expect(parserThreads()).toHaveLength(1);

    // A grown worker that takes a small message next is still ended once idle: what it grew is still held.
    await parser.parse(streamed(LARGE));
    const grown = parserThreads();
    expect((await parser.parse(Buffer.from("From: a@example.org\r\nSubject: small\r\n\r\nagain\r\n"))).text).toBe("again\n");
    expect(parserThreads()).toEqual(grown);
    for (let i = 0; i < 200 && parserThreads().length > 0; i++) await sleep(100);
    expect(parserThreads()).toEqual([]);
  },
  60_000,
);
