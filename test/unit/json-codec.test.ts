import { create, type JsonValue, type Message } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, test } from "vitest";
import { MessageSchema, InboxSchema } from "../../gen/mailbox/v1/resources_pb.js";
import { readRequest, RestInputError, writeMessage } from "../../src/rest/json.js";
import { buildRouteTable, type Route } from "../../src/rest/routes.js";
import { CONTRACT_SERVICES } from "../../src/rpc/services.js";

const routes = buildRouteTable(CONTRACT_SERVICES);
const route = (name: string): Route => routes.find((r) => r.method.name === name)!;
const parts = (over: Partial<Parameters<typeof readRequest>[1]> = {}) => ({
  params: {},
  query: new URLSearchParams(),
  headers: () => undefined,
  body: undefined,
  ...over,
});

describe("writing responses", () => {
  test("writes unset nullable fields as null and timestamps with exactly three fractional digits", () => {
    const inbox = create(InboxSchema, { id: "inb_x", createdAt: timestampFromMs(Date.UTC(2026, 0, 2, 3, 4, 5)) });
    const json = writeMessage(InboxSchema, inbox);
    expect(json.domainId).toBeNull();
    expect(json.createdAt).toBe("2026-01-02T03:04:05.000Z");
    expect(json.updatedAt).toBeNull();
    expect(json.localPart).toBe("");
  });

  test("omits html and replyTo when unset, and extracted on a message without inbound security; lists its attachments and cc", () => {
    const outbound = writeMessage(MessageSchema, create(MessageSchema, { id: "msg_x", direction: "outbound" }));
    expect(outbound).not.toHaveProperty("html");
    expect(outbound).not.toHaveProperty("replyTo");
    expect(outbound).not.toHaveProperty("extracted");
    expect(outbound.attachments).toEqual([]);
    expect(outbound.cc).toEqual([]);
    expect(outbound).not.toHaveProperty("inboundSecurity");
    expect(outbound.inReplyTo).toBeNull();
    expect(outbound.references).toEqual([]);
    expect(outbound.metadata).toBeNull();
  });

  test("writes attachments, even empty, on an inbound message, and metadata as a plain object", () => {
    const inbound = create(MessageSchema, {
      direction: "inbound",
      inboundSecurity: { trust: "untrusted" },
      metadata: { k: "v" },
    });
    const json = writeMessage(MessageSchema, inbound as Message);
    expect(json.attachments).toEqual([]);
    expect(json.metadata).toEqual({ k: "v" });
  });
});

describe("reading requests", () => {
  test("binds path, query and the idempotency-key header", () => {
    const req = readRequest(route("SendMessage"), parts({
      params: { inbox_id: "inb_0123456789abcdef01234567" },
      headers: (name) => (name === "idempotency-key" ? "key-12345" : undefined),
      body: { to: [{ email: "a@example.com" }], subject: "s", text: "t" },
    })) as unknown as { inboxId: string; idempotencyKey: string; to: { email: string }[] };
    expect(req.inboxId).toBe("inb_0123456789abcdef01234567");
    expect(req.idempotencyKey).toBe("key-12345");
    expect(req.to[0]!.email).toBe("a@example.com");
  });

  test.each([
    ["a path field in the body", "GetInbox", parts({ params: { inbox_id: "inb_x" }, body: { inboxId: "inb_y" } })],
    ["a header field in the body", "CreateWebhook", parts({ body: { url: "https://x", events: [], idempotencyKey: "abcdefgh" } })],
    ["an unknown body property", "CreateInbox", parts({ body: { localPart: "a", displayName: "b", nope: 1 } })],
    ["an unknown query parameter", "ListInboxes", parts({ query: new URLSearchParams("page=2") })],
    ["a non-integer limit", "ListInboxes", parts({ query: new URLSearchParams("limit=2.5") })],
    ["a string where an array belongs", "SendMessage", parts({ params: { inbox_id: "inb_x" }, body: { to: "a@example.com" } })],
    ["a body on an operation without one", "ListInboxes", parts({ body: { x: 1 } })],
    ["a non-object body", "CreateInbox", parts({ body: "text" })],
  ])("refuses %s", (_what, name, input) => {
    expect(() => readRequest(route(name), input)).toThrow(RestInputError);
  });

  test.each([
    ["a null subject", { to: [{ email: "a@example.com" }], subject: null, text: "t" }, "subject: must not be null"],
    ["a null recipient list", { to: null, text: "t" }, "to: must not be null"],
    ["a null recipient", { to: [{ email: "a@example.com" }, null], text: "t" }, "to[1]: must not be null"],
    ["a null email of a recipient", { to: [{ email: null }], text: "t" }, "to[0].email: must not be null"],
    ["an unpaired surrogate in a recipient name", { to: [{ email: "a@example.com" }, { email: "b@example.com", name: "B\ud800" }], text: "t" }, "to[1].name: must be Unicode text"],
    ["an unpaired surrogate in the Reply-To name", { to: [{ email: "a@example.com" }], replyTo: { email: "r@example.com", name: "\udc00" }, text: "t" }, "replyTo.name: must be Unicode text"],
    ["NUL in the subject", { to: [{ email: "a@example.com" }], subject: "a\u0000b", text: "t" }, "subject: must not contain NUL"],
  ] as [string, JsonValue, string][])("refuses %s, naming its JSON path", (_what, body, message) => {
    const read = () => readRequest(route("SendMessage"), parts({ params: { inbox_id: "inb_0123456789abcdef01234567" }, body }));
    expect(read).toThrow(RestInputError);
    expect(read).toThrow(message);
  });

  test("reads null as not given for a field with presence, as omitting it", () => {
    const req = readRequest(route("SendMessage"), parts({
      params: { inbox_id: "inb_0123456789abcdef01234567" },
      body: { to: [{ email: "a@example.com", name: null }], text: null, html: "<p>x</p>", replyTo: null, metadata: null },
    })) as unknown as Record<string, unknown> & { to: { name?: string }[] };
    expect(req.text).toBeUndefined();
    expect(req.replyTo).toBeUndefined();
    expect(req.metadata).toBeUndefined();
    expect(req.to[0]!.name).toBeUndefined();
    const inbox = readRequest(route("CreateInbox"), parts({ body: { localPart: "a", displayName: "A", domainId: null } })) as unknown as Record<string, unknown>;
    expect(inbox.domainId).toBeUndefined();
  });

  test("leaves free-form metadata to the validation interceptor, nulls and all", () => {
    const req = readRequest(route("SendMessage"), parts({
      params: { inbox_id: "inb_0123456789abcdef01234567" },
      body: { to: [{ email: "a@example.com" }], text: "t", metadata: { a: null, b: ["\ud800"] } },
    })) as unknown as { metadata: unknown };
    expect(req.metadata).toEqual({ a: null, b: ["\ud800"] });
  });
});
