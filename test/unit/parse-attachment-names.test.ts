// Attachment ids and display names: the sender's filename is untrusted, so it is made harmless to show and save.
import { describe, expect, test } from "vitest";
import { attachmentId, sanitizeFilename } from "../../src/inbound/attachments.js";

describe("attachmentId", () => {
  test("is att_ with the message id's hex and the 1-based position, the spec's shape", () => {
    const id = attachmentId("msg_0123456789abcdef01234567", 12);
    expect(id).toBe("att_0123456789abcdef01234567_12");
    expect(id).toMatch(/^att_[a-f0-9]{24}_[1-9][0-9]{0,2}$/);
  });
});

describe("sanitizeFilename", () => {
  test.each([
    ["keeps an ordinary name", "report.pdf", "report.pdf"],
    ["keeps letters of any script", "Übersicht – März 資料.csv", "Übersicht – März 資料.csv"],
    ["drops a Unix directory part", "../../etc/passwd", "passwd"],
    ["drops a Windows directory part", "C:\\Users\\x\\evil.bat", "evil.bat"],
    ["removes a right-to-left override that disguises an extension", "invoice\u202Efdp.exe", "invoicefdp.exe"],
    ["removes zero-width and other invisible characters", "a\u200Bb\uFEFFc\u2066.txt", "abc.txt"],
    ["removes control characters and line breaks", "line\r\nbreak\u0007.txt", "linebreak.txt"],
    ["replaces characters file systems refuse", 'what?<is>:this|"*.txt', "what__is__this___.txt"],
    ["collapses white space", "a \t  b.txt", "a b.txt"],
    ["does not make a hidden file", "...htaccess", "htaccess"],
    ["drops trailing dots and spaces (Windows strips them)", "name.txt. . ", "name.txt"],
  ])("%s", (_name, name, expected) => {
    expect(sanitizeFilename(name, 1)).toBe(expected);
  });

  test.each([null, "", "../", " . ", "\u202E\u200B"])("falls back to attachment-<position> when nothing is left of %j", (name) => {
    expect(sanitizeFilename(name, 7)).toBe("attachment-7");
  });

  test("shortens a long name to 200 characters and keeps its extension", () => {
    const name = sanitizeFilename(`${"n".repeat(300)}.docx`, 1);
    expect([...name]).toHaveLength(200);
    expect(name.endsWith("n.docx")).toBe(true);
  });
});
