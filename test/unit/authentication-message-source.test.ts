// The header section read before anything is trusted (src/authentication/message-source.ts): the same split
// whatever the chunking of a stream, every way RFC 5322's empty line is written, and no further than the bound.
import { describe, expect, test } from "vitest";
import { splitHeaderSection, verifierInput } from "../../src/authentication/message-source.js";

async function* chunks(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function collect(source: Iterable<Uint8Array> | AsyncIterable<Uint8Array> | Uint8Array): Promise<string> {
  if (source instanceof Uint8Array) return Buffer.from(source).toString("latin1");
  const out: Buffer[] = [];
  for await (const chunk of source) out.push(Buffer.from(chunk));
  return Buffer.concat(out).toString("latin1");
}

describe("the header section", () => {
  test.each([
    ["CRLF", "A: b\r\nC: d\r\n\r\nbody\r\n", "A: b\r\nC: d\r\n\r\n"],
    ["bare LF", "A: b\nC: d\n\nbody\n", "A: b\nC: d\n\n"],
    ["CRLF then a bare LF", "A: b\r\n\nbody", "A: b\r\n\n"],
    ["a bare LF then CRLF", "A: b\n\r\nbody", "A: b\n\r\n"],
    ["an empty first line (no header fields)", "\r\nA: not a header\r\n", "\r\n"],
    ["an empty first line, bare LF", "\nbody", "\n"],
    ["no empty line (no body)", "A: b\r\nC: d\r\n", "A: b\r\nC: d\r\n"],
  ])("ends at %s, in every chunking of a stream", async (_what, text, header) => {
    const message = Buffer.from(text);
    const whole = await splitHeaderSection(message, 1000);
    expect(whole?.header.toString("latin1")).toBe(header);
    for (const size of [1, 2, 3, 5, 1000]) {
      const split = await splitHeaderSection(chunks(message, size), 1000);
      expect(split?.header.toString("latin1"), `chunks of ${size}`).toBe(header);
      expect(await collect(split!.body), `chunks of ${size}`).toBe(text.slice(header.length));
    }
  });

  test("a header section over the bound is not read: undefined, the stream released after the bound", async () => {
    const message = Buffer.from(`A: ${"x".repeat(5000)}\r\n\r\nbody`);
    expect(await splitHeaderSection(message, 1000)).toBeUndefined();
    let pulled = 0;
    let released = false;
    async function* counted(): AsyncGenerator<Uint8Array> {
      try {
        for await (const chunk of chunks(message, 7)) {
          pulled++;
          yield chunk;
        }
      } finally {
        released = true;
      }
    }
    expect(await splitHeaderSection(counted(), 1000)).toBeUndefined();
    expect(pulled).toBeLessThanOrEqual(Math.ceil(1003 / 7) + 1);
    expect(released).toBe(true);
    expect((await splitHeaderSection(chunks(message, 7), 10_000))?.header.length).toBe(5007);
  });
});

describe("what the DKIM verifier reads", () => {
  test.each([
    ["in one piece", (b: Buffer) => b],
    ["streamed", (b: Buffer) => chunks(b, 5)],
  ])("bare LFs become CRLF and CRLF stays, across chunk boundaries (%s)", async (_what, source) => {
    const split = await splitHeaderSection(source(Buffer.from("A: b\nC: d\r\n\na\nb\r\n\n\r\r\nend")), 1000);
    expect(await collect(verifierInput(split!, 100))).toBe("A: b\r\nC: d\r\n\r\na\r\nb\r\n\r\n\r\r\nend");
  });

  test("a body line over the limit is refused, in one piece at once, streamed when its chunk is read", async () => {
    const long = Buffer.from(`A: b\r\n\r\nshort\r\n${"x".repeat(200)}\r\n`);
    expect(() => verifierInput({ header: long.subarray(0, 8), body: long.subarray(8), release: async () => undefined }, 100)).toThrow(/longer than 100 bytes/);
    const streamed = await splitHeaderSection(chunks(long, 64), 1000);
    await expect(collect(verifierInput(streamed!, 100))).rejects.toThrow(/longer than 100 bytes/);
    // Header lines are the header bound's business.
    const header = await splitHeaderSection(Buffer.from(`A: ${"x".repeat(200)}\r\n\r\nshort\r\n`), 1000);
    expect(await collect(verifierInput(header!, 100))).toContain("short");
  });
});
