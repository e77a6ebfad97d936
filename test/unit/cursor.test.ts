import { describe, expect, test } from "vitest";
import { createCursorCodec } from "../../src/pagination/cursor.js";

const codec = createCursorCodec("s".repeat(32));
const scope = { organizationId: "org-a", resource: "inboxes" };
const position = { createdAt: new Date("2026-01-02T03:04:05.678Z"), id: "inb_0123456789abcdef01234567" };

describe("pagination cursors", () => {
  test("round-trip the keyset position for the same tenant and list", () => {
    expect(codec.decode(scope, codec.encode(scope, position))).toEqual(position);
  });

  test.each([
    ["another organization", { organizationId: "org-b", resource: "inboxes" }],
    ["another list", { organizationId: "org-a", resource: "threads:inb_x" }],
  ])("are refused for %s", (_what, other) => {
    expect(() => codec.decode(other, codec.encode(scope, position))).toThrow(/not valid/);
  });

  test("are refused when tampered with, truncated, or signed with another secret", () => {
    const cursor = codec.encode(scope, position);
    const [payload, mac] = cursor.split(".");
    const forged = Buffer.from(JSON.stringify([0, "inb_0"])).toString("base64url");
    expect(() => codec.decode(scope, `${forged}.${mac}`)).toThrow(/not valid/);
    expect(() => codec.decode(scope, payload!)).toThrow(/not valid/);
    expect(() => codec.decode(scope, `${cursor}.x`)).toThrow(/not valid/);
    expect(() => createCursorCodec("t".repeat(32)).decode(scope, cursor)).toThrow(/not valid/);
  });
});
