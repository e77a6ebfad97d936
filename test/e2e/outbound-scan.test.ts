// The scan every outbound file goes through before a send or an upload is accepted (requireCleanFiles), against the
// run's real clamd (Debian's clamav-daemon with a local EICAR signature, started by the global setup): clean files
// pass, an infected one is 422 with clamd's finding, a clamd that gives no verdict is 503 to retry, and nothing
// larger than the scanner takes is ever judged clean.
import { beforeAll, describe, expect, inject, test } from "vitest";
import { DomainError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { requireCleanFiles, type OutboundScanning, type ScannedFile } from "../../src/outbound/attachment-scan.js";
import { EICAR } from "../../src/scanning/builtin.js";
import { createScanner } from "../../src/scanning/configured-scanner.js";
import { CLAMD_STREAM_MAX_BYTES, EICAR_SIGNATURE } from "../support/clamd.js";

let clamdAddress: string;
beforeAll(() => {
  const provided = inject("clamd");
  if ("failure" in provided) throw new Error(`the test clamd did not start: ${provided.failure}`);
  clamdAddress = provided.tcpAddress;
});

/** The scanning of a configuration with CLAMD_ADDRESS set, its warnings kept. */
function scanningWith(address: string, maxBytes = 25 * 1024 * 1024): OutboundScanning & { warnings: string[] } {
  const warnings: string[] = [];
  const log = createLogger("warn", (line) => warnings.push(line));
  return { scanner: createScanner({ clamdAddress: address, timeoutMs: 10_000, maxBytes }), maxBytes, log, warnings };
}

const file = (label: string, content: Buffer | string): ScannedFile => ({
  label,
  filename: label,
  contentType: "application/octet-stream",
  content: typeof content === "string" ? Buffer.from(content) : content,
});

async function refusal(promise: Promise<unknown>): Promise<DomainError> {
  const e = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DomainError)) throw new Error(`expected a refusal, got ${String(e)}`);
  return e;
}

describe("outbound files through clamd", () => {
  test("clean files pass: text, binary, an empty file", async () => {
    const scanning = scanningWith(clamdAddress);
    await expect(
      requireCleanFiles(scanning, [file("attachments[0] (a.txt)", "quarterly numbers"), file("attachments[1] (b.bin)", Buffer.alloc(200_000, 7)), file("attachments[2] (c)", "")]),
    ).resolves.toBeUndefined();
  });

  test("an infected file is 422 attachment_infected naming it and clamd's finding, the clean ones beside it not named", async () => {
    const e = await refusal(
      requireCleanFiles(scanningWith(clamdAddress), [
        file("attachments[0] (notes.txt)", "fine"),
        file("attachments[1] (eicar.com)", Buffer.concat([Buffer.from("Dear agent,\r\n"), EICAR])),
      ]),
    );
    expect([e.errorCode, e.message]).toEqual([
      "attachment_infected",
      `the attachment scanner found malware, so nothing was stored or sent: attachments[1] (eicar.com): ${EICAR_SIGNATURE}.UNOFFICIAL`,
    ]);
  });

  test("a clamd that cannot be reached is 503 scan_unavailable with Retry-After; the reason is logged, not told", async () => {
    const scanning = scanningWith("127.0.0.1:1");
    const e = await refusal(requireCleanFiles(scanning, [file("attachments[0] (a.txt)", "hello")]));
    expect([e.errorCode, e.retryAfterSeconds]).toEqual(["scan_unavailable", 30]);
    expect(e.message).not.toContain("127.0.0.1");
    expect(scanning.warnings.join("\n")).toMatch(/outbound attachment scan failed.*clamd at 127\.0\.0\.1:1: connect ECONNREFUSED/);
  });

  test("content clamd will not take whole (past its StreamMaxLength) gets no verdict: 503, never clean", async () => {
    const e = await refusal(requireCleanFiles(scanningWith(clamdAddress), [file("attachments[0] (big.bin)", Buffer.alloc(CLAMD_STREAM_MAX_BYTES + 1024, 1))]));
    expect(e.errorCode).toBe("scan_unavailable");
  });

  test("a file larger than SCAN_MAX_BYTES is 413 attachment_too_large before anything is scanned", async () => {
    // An unreachable clamd: a scan would answer 503.
    const e = await refusal(requireCleanFiles(scanningWith("127.0.0.1:1", 1024), [file("attachments[0] (a.bin)", Buffer.alloc(1025))]));
    expect([e.errorCode, e.message]).toEqual(["attachment_too_large", "attachments[0] (a.bin): 1025 bytes: larger than the attachment scanner takes (1024 bytes)"]);
  });
});
