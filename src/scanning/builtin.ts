// The built-in scanner: the embedded default when no clamd is configured. A safety net, not an antivirus: it knows
// no malware signature beyond the EICAR test file; it flags content an agent should never open unreviewed
// (executables, scripts, Office macros) and looks into zip, gzip and tar archives. README "Attachment scanning"
// lists its rules; what it cannot look into is an error verdict, never clean.
import { gunzipSync, inflateRawSync } from "node:zlib";
import type { ScanMeta, ScanVerdict, Scanner } from "./scanner.js";

export interface BuiltinScannerLimits {
  /** Archives nested deeper than this are not opened (an error verdict). The attachment itself is level 0. */
  readonly maxDepth: number;
  /** Bytes that the compressed members of all archives may expand to together. */
  readonly maxExpandedBytes: number;
  /** Members of all archives together. */
  readonly maxEntries: number;
}

export const DEFAULT_BUILTIN_LIMITS: BuiltinScannerLimits = { maxDepth: 3, maxExpandedBytes: 64 * 1024 * 1024, maxEntries: 1000 };

/** The EICAR anti-malware test file (eicar.org): 68 printable bytes that every scanner reports. */
export const EICAR = Buffer.from("X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*", "latin1");

const EXECUTABLE_EXTENSIONS = new Set(["exe", "dll", "scr", "com", "pif", "cpl", "msi", "msp", "jar", "lnk", "appx", "msix"]);
const SCRIPT_EXTENSIONS = new Set(["js", "jse", "vbs", "vbe", "vb", "wsf", "wsc", "wsh", "hta", "ps1", "psm1", "bat", "cmd", "sh", "reg"]);
const MACRO_EXTENSIONS = new Set(["docm", "dotm", "xlsm", "xltm", "xlam", "pptm", "potm", "ppam", "ppsm", "sldm"]);
const EXECUTABLE_TYPES = new Set([
  "application/x-msdownload",
  "application/x-msdos-program",
  "application/x-dosexec",
  "application/x-executable",
  "application/x-elf",
  "application/x-mach-binary",
  "application/vnd.microsoft.portable-executable",
  "application/x-msi",
  "application/x-ms-installer",
  "application/x-ms-shortcut",
  "application/java-archive",
  "application/x-java-archive",
]);
const SCRIPT_TYPES = new Set([
  "application/javascript",
  "application/x-javascript",
  "application/ecmascript",
  "text/javascript",
  "text/ecmascript",
  "text/jscript",
  "text/vbscript",
  "application/x-vbscript",
  "application/hta",
  "application/x-sh",
  "application/x-shellscript",
  "text/x-shellscript",
  "text/x-sh",
  "application/x-bat",
  "application/x-powershell",
]);

/** Compressed or container formats the scanner cannot open, by their magic bytes at an offset. */
const OPAQUE_ARCHIVES: readonly { kind: string; offset: number; magic: Buffer }[] = [
  { kind: "rar", offset: 0, magic: Buffer.from("Rar!\x1a\x07", "latin1") },
  { kind: "7z", offset: 0, magic: Buffer.from("377abcaf271c", "hex") },
  // After "BZh" and the block size digit: the first block's magic (pi), or the end-of-stream magic (sqrt pi).
  { kind: "bzip2", offset: 4, magic: Buffer.from("314159265359", "hex") },
  { kind: "bzip2", offset: 4, magic: Buffer.from("177245385090", "hex") },
  { kind: "xz", offset: 0, magic: Buffer.from("fd377a585a00", "hex") },
  { kind: "zstd", offset: 0, magic: Buffer.from("28b52ffd", "hex") },
  { kind: "lzip", offset: 0, magic: Buffer.from("LZIP", "latin1") },
  { kind: "cab", offset: 0, magic: Buffer.from("MSCF\0\0\0\0", "latin1") },
  { kind: "ar", offset: 0, magic: Buffer.from("!<arch>\n", "latin1") },
  { kind: "arj", offset: 0, magic: Buffer.from("60ea", "hex") },
  { kind: "ace", offset: 7, magic: Buffer.from("**ACE**", "latin1") },
  { kind: "iso9660", offset: 0x8001, magic: Buffer.from("CD001", "latin1") },
];

const OLE2_MAGIC = Buffer.from("d0cf11e0a1b11ae1", "hex");
/** The stream every VBA project of a binary Office file has; directory names in OLE2 are UTF-16LE. */
const OLE2_VBA_STREAM = Buffer.from("_VBA_PROJECT", "utf16le");
/** Windows shell link header (MS-SHLLINK): HeaderSize 0x4C and the link CLSID. */
const SHELL_LINK_MAGIC = Buffer.from("4c0000000114020000000000c000000000000046", "hex");
const MACH_O_MAGICS = ["feedface", "feedfacf", "cefaedfe", "cffaedfe"].map((hex) => Buffer.from(hex, "hex"));

/** Raised where the scanner cannot see all of the content: the verdict is an error. */
class CannotInspect extends Error {}

interface Budget {
  expandedBytes: number;
  entries: number;
}

interface Member {
  readonly name: string;
  /** Extracts the member's bytes, charged to the budget; throws CannotInspect when it cannot. */
  readonly bytes: () => Buffer;
}

export function createBuiltinScanner(limits: BuiltinScannerLimits = DEFAULT_BUILTIN_LIMITS): Scanner {
  return {
    async scan(content, meta) {
      const budget: Budget = { expandedBytes: limits.maxExpandedBytes, entries: limits.maxEntries };
      const verdict = inspect(Buffer.from(content.buffer, content.byteOffset, content.byteLength), meta, [], limits, budget);
      if (verdict.state === "error") return { state: "error", reason: `built-in scanner: ${verdict.reason}` };
      return verdict;
    },
  };
}

function inspect(bytes: Buffer, meta: ScanMeta, path: readonly string[], limits: BuiltinScannerLimits, budget: Budget): ScanVerdict {
  const found = contentFinding(bytes) ?? declaredFinding(meta);
  if (found) return { state: "infected", finding: path.length > 0 ? `${found} in ${path.join("/")}` : found };
  const opaque = OPAQUE_ARCHIVES.find((a) => startsWithAt(bytes, a.magic, a.offset));
  const where = path.length > 0 ? ` (${path.join("/")})` : "";
  if (opaque) return { state: "error", reason: `cannot look into ${opaque.kind} archives${where}` };
  const open = archiveOpener(bytes, meta.filename);
  if (!open) return { state: "clean" };
  if (path.length >= limits.maxDepth) return { state: "error", reason: `archives nested deeper than ${limits.maxDepth} levels${where}` };

  let members: Member[];
  try {
    members = open(budget);
  } catch (e) {
    return cannotInspect(e, where);
  }
  // Names first: they cost nothing to check, and an infected member wins over one that cannot be opened.
  for (const member of members) {
    const found = declaredFinding({ filename: member.name, contentType: "" });
    if (found) return { state: "infected", finding: `${found} in ${[...path, member.name].join("/")}` };
  }
  let firstError: ScanVerdict | undefined;
  for (const member of members) {
    let verdict: ScanVerdict;
    try {
      verdict = inspect(member.bytes(), { filename: member.name, contentType: "" }, [...path, member.name], limits, budget);
    } catch (e) {
      verdict = cannotInspect(e, where);
    }
    if (verdict.state === "infected") return verdict;
    if (verdict.state === "error") firstError ??= verdict;
  }
  return firstError ?? { state: "clean" };
}

function cannotInspect(e: unknown, where: string): ScanVerdict {
  if (!(e instanceof CannotInspect)) throw e;
  return { state: "error", reason: `${e.message}${where}` };
}

/** What the bytes themselves are, whatever the sender called them. */
function contentFinding(bytes: Buffer): string | undefined {
  if (bytes.includes(EICAR)) return "EICAR-Test-File";
  if (isWindowsExecutable(bytes)) return "Executable.Windows";
  if (startsWith(bytes, Buffer.from("\x7fELF", "latin1"))) return "Executable.ELF";
  if (MACH_O_MAGICS.some((magic) => startsWith(bytes, magic))) return "Executable.MachO";
  // 0xCAFEBABE opens both universal Mach-O binaries (then an architecture count) and Java classes (then a version ≥ 45).
  if (startsWith(bytes, Buffer.from("cafebabe", "hex")) && bytes.byteLength >= 8) {
    return bytes.readUInt32BE(4) < 45 ? "Executable.MachO" : "Executable.JavaClass";
  }
  if (startsWith(bytes, SHELL_LINK_MAGIC)) return "Executable.ShellLink";
  if (/^#! ?\//.test(bytes.toString("latin1", 0, 4))) return "Script.Shebang";
  if (startsWith(bytes, OLE2_MAGIC) && bytes.includes(OLE2_VBA_STREAM)) return "Macro.OLE2";
  return undefined;
}

/** An MZ header whose e_lfanew (offset 0x3C) points at a PE, NE, LE or LX header: what Windows loads. */
function isWindowsExecutable(bytes: Buffer): boolean {
  if (bytes.byteLength < 64 || !startsWith(bytes, Buffer.from("MZ", "latin1"))) return false;
  const header = bytes.readUInt32LE(0x3c);
  if (header + 4 > bytes.byteLength) return false;
  const signature = bytes.toString("latin1", header, header + 4);
  return signature === "PE\0\0" || ["NE", "LE", "LX"].includes(signature.slice(0, 2));
}

/** What the sender's filename and declared type say it is. */
function declaredFinding(meta: ScanMeta): string | undefined {
  // Windows drops trailing dots and spaces, so "run.js. " opens as run.js.
  const name = meta.filename.toLowerCase().replace(/[. ]+$/, "");
  const base = name.slice(name.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  const extension = dot === -1 ? "" : base.slice(dot + 1);
  const type = meta.contentType.toLowerCase().split(";")[0]!.trim();
  if (base === "vbaproject.bin") return "Macro.OOXML";
  if (EXECUTABLE_EXTENSIONS.has(extension)) return "Executable.Extension";
  if (EXECUTABLE_TYPES.has(type)) return "Executable.ContentType";
  if (SCRIPT_EXTENSIONS.has(extension)) return "Script.Extension";
  if (SCRIPT_TYPES.has(type)) return "Script.ContentType";
  if (MACRO_EXTENSIONS.has(extension)) return "Macro.Extension";
  if (type.includes("macroenabled")) return "Macro.ContentType";
  return undefined;
}

/** A function listing the members of the archive the bytes are, or undefined when they are no archive we open. */
function archiveOpener(bytes: Buffer, filename: string): ((budget: Budget) => Member[]) | undefined {
  if (bytes.byteLength >= 4 && bytes.readUInt32LE(0) === ZIP_LOCAL_HEADER) return (budget) => zipMembers(bytes, budget);
  if (bytes.byteLength >= 22 && bytes.readUInt32LE(0) === ZIP_END) return (budget) => zipMembers(bytes, budget);
  if (startsWith(bytes, Buffer.from("1f8b08", "hex"))) return (budget) => [gzipMember(bytes, filename, budget)];
  if (startsWithAt(bytes, Buffer.from("ustar", "latin1"), 257)) return (budget) => tarMembers(bytes, budget);
  return undefined;
}

const ZIP_LOCAL_HEADER = 0x04034b50;
const ZIP_CENTRAL_HEADER = 0x02014b50;
const ZIP_END = 0x06054b50;

/** Members of a zip archive (APPNOTE.TXT), read from its central directory. Zip64 and encryption are not opened. */
function zipMembers(zip: Buffer, budget: Budget): Member[] {
  const endMin = Math.max(0, zip.byteLength - 22 - 0xffff);
  let end = -1;
  for (let i = zip.byteLength - 22; i >= endMin; i--) {
    if (zip.readUInt32LE(i) === ZIP_END) {
      end = i;
      break;
    }
  }
  if (end === -1) throw new CannotInspect("a zip archive without its central directory");
  const count = zip.readUInt16LE(end + 10);
  const directoryOffset = zip.readUInt32LE(end + 16);
  if (count === 0xffff || directoryOffset === 0xffffffff) throw new CannotInspect("zip64 archives are not opened");
  takeEntries(budget, count);
  const members: Member[] = [];
  let at = directoryOffset;
  for (let n = 0; n < count; n++) {
    if (at + 46 > zip.byteLength || zip.readUInt32LE(at) !== ZIP_CENTRAL_HEADER) throw new CannotInspect("a malformed zip central directory");
    const flags = zip.readUInt16LE(at + 8);
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const localOffset = zip.readUInt32LE(at + 42);
    // Bit 11: the name is UTF-8; otherwise it is CP437, whose ASCII range is all the rules look at.
    const name = zip.toString(flags & 0x800 ? "utf8" : "latin1", at + 46, at + 46 + nameLength);
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    if (name.endsWith("/")) continue;
    if (flags & 0x1) throw new CannotInspect(`an encrypted zip member ${name}`);
    members.push({
      name,
      bytes: () => {
        if (localOffset + 30 > zip.byteLength || zip.readUInt32LE(localOffset) !== ZIP_LOCAL_HEADER) {
          throw new CannotInspect(`a malformed zip member ${name}`);
        }
        const start = localOffset + 30 + zip.readUInt16LE(localOffset + 26) + zip.readUInt16LE(localOffset + 28);
        if (start + compressedSize > zip.byteLength) throw new CannotInspect(`a truncated zip member ${name}`);
        const data = zip.subarray(start, start + compressedSize);
        if (method === 0) return data;
        if (method !== 8) throw new CannotInspect(`zip compression method ${method} of ${name}`);
        return expand(budget, size, name, (maxOutputLength) => inflateRawSync(data, { maxOutputLength }));
      },
    });
  }
  return members;
}

/** The one member of a gzip file, named as gunzip would name it. */
function gzipMember(gz: Buffer, filename: string, budget: Budget): Member {
  takeEntries(budget, 1);
  const base = filename.slice(filename.lastIndexOf("/") + 1);
  const name = /\.tgz$/i.test(base) ? base.replace(/\.tgz$/i, ".tar") : base.replace(/\.gz$/i, "");
  return { name, bytes: () => expand(budget, 0, name, (maxOutputLength) => gunzipSync(gz, { maxOutputLength })) };
}

/** Regular files of a POSIX (ustar) or GNU tar archive; GNU long names are honoured. */
function tarMembers(tar: Buffer, budget: Budget): Member[] {
  const members: Member[] = [];
  let longName: string | undefined;
  for (let at = 0; at + 512 <= tar.byteLength; ) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const sizeField = header.subarray(124, 136);
    if (sizeField[0]! & 0x80) throw new CannotInspect("a tar member of base-256 size");
    const size = parseInt(cString(sizeField).trim() || "0", 8);
    if (!Number.isSafeInteger(size) || at + 512 + size > tar.byteLength) throw new CannotInspect("a truncated tar archive");
    const data = tar.subarray(at + 512, at + 512 + size);
    const type = String.fromCharCode(header[156]!);
    const prefix = cString(header.subarray(345, 500));
    const name = longName ?? (prefix ? `${prefix}/${cString(header.subarray(0, 100))}` : cString(header.subarray(0, 100)));
    longName = undefined;
    if (type === "L") longName = cString(data);
    else if (type === "0" || type === "\0" || type === "7") {
      takeEntries(budget, 1);
      members.push({ name, bytes: () => data });
    }
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return members;
}

function takeEntries(budget: Budget, n: number): void {
  budget.entries -= n;
  if (budget.entries < 0) throw new CannotInspect("archives with more members than the scanner opens");
}

/** Decompresses within what is left of the budget; a member that would exceed it is not inspected. */
function expand(budget: Budget, declaredSize: number, name: string, run: (maxOutputLength: number) => Buffer): Buffer {
  if (declaredSize > budget.expandedBytes || budget.expandedBytes === 0) {
    throw new CannotInspect(`archive members expanding beyond the scanner's limit (${name})`);
  }
  let out: Buffer;
  try {
    out = run(budget.expandedBytes);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
      throw new CannotInspect(`archive members expanding beyond the scanner's limit (${name})`);
    }
    throw new CannotInspect(`a corrupt compressed member ${name}`);
  }
  budget.expandedBytes -= out.byteLength;
  return out;
}

function cString(field: Buffer): string {
  const end = field.indexOf(0);
  return field.toString("utf8", 0, end === -1 ? field.byteLength : end);
}

function startsWith(bytes: Buffer, magic: Buffer): boolean {
  return startsWithAt(bytes, magic, 0);
}

function startsWithAt(bytes: Buffer, magic: Buffer, offset: number): boolean {
  return bytes.byteLength >= offset + magic.byteLength && bytes.compare(magic, 0, magic.byteLength, offset, offset + magic.byteLength) === 0;
}
