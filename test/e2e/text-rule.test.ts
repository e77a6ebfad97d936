// The contract's text rule (options.proto) on every face: NUL and unpaired surrogates in any request string, and
// control or bidirectional-override characters in names, are a 400 invalid_request naming the field as the JSON
// face spells it, and nothing is stored. PostgreSQL refuses NUL in text and jsonb, so before the rule these were
// 500s.
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ErrorDetailSchema } from "../../gen/mailbox/v1/errors_pb.js";
import { InboxService } from "../../gen/mailbox/v1/inbox_service_pb.js";
import { MessageService } from "../../gen/mailbox/v1/message_service_pb.js";
import { Inbox, Message, Submission } from "../../src/db/entities/index.js";
import { startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});

afterAll(async () => {
  await app?.stop();
});

const FACES = ["json", "connectJson", "connect", "grpc", "grpcWeb"] as const;
type Face = (typeof FACES)[number];
/** Protobuf binary cannot carry an unpaired surrogate (the encoder writes U+FFFD): only JSON faces can send one. */
const JSON_FACES: readonly Face[] = ["json", "connectJson"];

/** A Connect client that speaks JSON (the harness's speaks protobuf binary). */
function connectJson<S extends DescService>(tenant: Tenant, service: S): Client<S> {
  const transport = createConnectTransport({
    baseUrl: app.baseUrl,
    httpVersion: "1.1",
    useBinaryFormat: false,
    interceptors: [(next) => (req) => (req.header.set("x-api-key", tenant.key), next(req))],
  });
  return createClient(service, transport);
}

const SEND = {
  to: [{ email: "alice@example.com" }, { email: "bob@example.com", name: "Bob" }],
  subject: "Order 4711",
  text: "Shipped.",
  metadata: { order: "4711" },
};

/** The last element, on cases only JSON can carry: the proto field the Connect JSON reader names when it refuses. */
type Case = [what: string, field: string, operation: "createInbox" | "sendMessage", body: Record<string, unknown>, readerField?: string];

const nul = "\u0000";
const surrogate = "\ud800";
const CASES: { cases: Case[]; faces: readonly Face[] }[] = [
  {
    faces: FACES,
    cases: [
      ["NUL in the subject", "subject", "sendMessage", { ...SEND, subject: `Order${nul}4711` }],
      ["NUL in the text", "text", "sendMessage", { ...SEND, text: `Ship${nul}ped` }],
      ["NUL in the html", "html", "sendMessage", { ...SEND, html: `<p>${nul}</p>` }],
      ["NUL in a metadata value", "metadata.order", "sendMessage", { ...SEND, metadata: { order: `47${nul}11` } }],
      ["NUL in a nested metadata value", "metadata.lines[1].sku", "sendMessage", { ...SEND, metadata: { lines: [{ sku: "a" }, { sku: nul }] } }],
      ["NUL in a metadata key", 'metadata key "or\\u0000der"', "sendMessage", { ...SEND, metadata: { [`or${nul}der`]: "x" } }],
      ["NUL in a recipient name", "to[1].name", "sendMessage", { ...SEND, to: [SEND.to[0], { email: "bob@example.com", name: `B${nul}ob` }] }],
      ["a control character in a recipient name", "to[1].name", "sendMessage", { ...SEND, to: [SEND.to[0], { email: "bob@example.com", name: "Bob\u0007" }] }],
      ["U+202E in a recipient name", "to[1].name", "sendMessage", { ...SEND, to: [SEND.to[0], { email: "bob@example.com", name: "moc.live\u202e" }] }],
      ["NUL in a Reply-To name", "replyTo.name", "sendMessage", { ...SEND, replyTo: { email: "desk@example.com", name: nul } }],
      ["NUL in a display name", "displayName", "createInbox", { displayName: `Support${nul}Bot` }],
      ["a control character in a display name", "displayName", "createInbox", { displayName: "Support\u001bBot" }],
      ["U+202E in a display name", "displayName", "createInbox", { displayName: "Support\u202eBot" }],
      ["U+2066 in a display name", "displayName", "createInbox", { displayName: "Support\u2066Bot" }],
      ["a line break in a display name", "displayName", "createInbox", { displayName: "Support\r\nBcc: eve@evil.test" }],
    ],
  },
  {
    faces: JSON_FACES,
    cases: [
      ["an unpaired surrogate in the subject", "subject", "sendMessage", { ...SEND, subject: `Order${surrogate}` }, "SendMessageRequest.subject"],
      ["an unpaired surrogate in a metadata value", "metadata.order", "sendMessage", { ...SEND, metadata: { order: "\udc00" } }],
      ["an unpaired surrogate in a recipient name", "to[1].name", "sendMessage", { ...SEND, to: [SEND.to[0], { email: "bob@example.com", name: surrogate }] }, "Address.name"],
      ["an unpaired surrogate in a display name", "displayName", "createInbox", { displayName: surrogate }, "CreateInboxRequest.display_name"],
    ],
  },
];

interface Refusal {
  readonly status: number | Code;
  readonly error: string | undefined;
  readonly message: string;
}

async function call(tenant: Tenant, face: Face, operation: Case[2], inboxId: string, body: Record<string, unknown>): Promise<Refusal | "accepted"> {
  const idempotencyKey = uniqueName("text-rule");
  if (face === "json") {
    const res =
      operation === "createInbox"
        ? await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("t"), ...body } })
        : await tenant.request("POST", `/v1/inboxes/${inboxId}/messages`, { body, headers: { "idempotency-key": idempotencyKey } });
    return res.status < 300 ? "accepted" : { status: res.status, error: res.body.error, message: res.body.message };
  }
  const client = <S extends DescService>(service: S) => (face === "connectJson" ? connectJson(tenant, service) : tenant[face](service));
  try {
    if (operation === "createInbox") await client(InboxService).createInbox({ localPart: uniqueName("t"), ...body } as never);
    else await client(MessageService).sendMessage({ inboxId, idempotencyKey, ...body } as never);
    return "accepted";
  } catch (e) {
    const err = ConnectError.from(e);
    return { status: err.code, error: err.findDetails(ErrorDetailSchema)[0]?.code, message: err.rawMessage };
  }
}

describe.each(FACES)("the %s face", (face) => {
  const cases = CASES.filter((group) => group.faces.includes(face)).flatMap((group) => group.cases);

  test.each(cases)("refuses %s with 400 invalid_request naming %s, storing nothing", async (_what, field, operation, body, readerField) => {
    const tenant = await app.createTenant();
    const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("sender"), displayName: "Sender" } });
    expect(inbox.status).toBe(201);
    const refusal = await call(tenant, face, operation, inbox.body.id, body);
    if (face === "connectJson" && readerField) {
      // Connect's JSON reader (protobuf-es) refuses an unpaired surrogate in a typed field before any interceptor
      // runs: invalid_argument, naming the proto field, without the error detail of our boundary.
      expect(refusal).toEqual({ status: Code.InvalidArgument, error: undefined, message: expect.stringContaining(`mailbox.v1.${readerField} from JSON`) });
    } else {
      const expected = face === "json" ? 400 : Code.InvalidArgument;
      expect(refusal).toEqual({ status: expected, error: "invalid_request", message: expect.stringContaining(`${field}: `) });
    }
    const em = app.db.fork();
    expect(await em.count(Inbox, { organization: tenant.organizationId })).toBe(1);
    expect(await em.count(Message, { organization: tenant.organizationId })).toBe(0);
    expect(await em.count(Submission, { organization: tenant.organizationId })).toBe(0);
  });

  test("accepts the same requests with clean text", async () => {
    const tenant = await app.createTenant();
    const inbox = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("sender"), displayName: "Sender" } });
    const name = "Zoë 山田 — “Support” 😀";
    expect(await call(tenant, face, "createInbox", inbox.body.id, { displayName: name })).toBe("accepted");
    const body = { ...SEND, to: [SEND.to[0], { email: "bob@example.com", name }], metadata: { order: "4711", note: "tab\tok\nline" } };
    expect(await call(tenant, face, "sendMessage", inbox.body.id, body)).toBe("accepted");
  });
});
