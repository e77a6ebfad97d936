import { create, getOption } from "@bufbuild/protobuf";
import { createValidator } from "@bufbuild/protovalidate";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { field as fieldRule } from "../../gen/mailbox/v1/options_pb.js";
import { SenderRuleSettingsSchema } from "../../gen/mailbox/v1/sender_rule_service_pb.js";
import { describe, expect, it } from "vitest";
import { registrableName } from "../../src/domains/domains.js";
import { parseOutboundAddress } from "../../src/outbound/addresses.js";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { buildOpenApi, FORMATS, mayMatchNul, openApiPath, REQUEST_BASE64, type JsonSchema, type Operation, type Parameter, type Response } from "../../src/rest/openapi.js";
import { buildRouteTable } from "../../src/rest/routes.js";
import { CONTRACT_SERVICES } from "../../src/rpc/services.js";
import { NAME_PATTERN, TEXT_PATTERN, textProblem } from "../../src/text-rule.js";

const routes = buildRouteTable(CONTRACT_SERVICES);
const doc = buildOpenApi(routes);

/** A copy without descriptions (the contract's comments), for the tests of schemas' shapes. */
function bare<T>(x: T): T {
  return JSON.parse(JSON.stringify(x, (key, value: unknown) => (key === "description" && typeof value === "string" ? undefined : value))) as T;
}

function operation(verb: string, path: string): Operation {
  const op = doc.paths[path]?.[verb];
  if (!op) throw new Error(`no ${verb} ${path}`);
  return bare(op);
}

function schema(name: string): JsonSchema {
  const s = doc.components.schemas[name];
  if (!s) throw new Error(`no schema ${name}`);
  return bare(s);
}

function parameter(op: Operation, name: string): Parameter {
  const p = op.parameters.find((x) => x.name === name);
  if (!p) throw new Error(`no parameter ${name} on ${op.operationId}`);
  return p;
}

describe("the OpenAPI document", () => {
  it("validates as an OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(JSON.parse(JSON.stringify(doc)) as Record<string, unknown>);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
  });

  it("describes the private beta and the x-api-key scheme", () => {
    expect(doc.info.version).toBe("0.1.0-private-beta");
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey", in: "header", name: "x-api-key" });
    expect(doc.security).toEqual([{ apiKey: [] }]);
  });

  it("lists every route under its verb and path, with camelCase path parameters and a unique operation id", () => {
    expect(routes.length).toBeGreaterThan(0);
    const ids = new Set<string>();
    for (const route of routes) {
      const path = route.template.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
      expect(openApiPath(route)).toBe(path);
      const op = operation(route.verb.toLowerCase(), path);
      ids.add(op.operationId);
      expect(op.tags).toEqual([route.method.parent.name]);
      const pathParams = op.parameters.filter((p) => p.in === "path").map((p) => `{${p.name}}`);
      expect(pathParams).toEqual(path.match(/\{\w+\}/g) ?? []);
    }
    expect(ids.size).toBe(routes.length);
    const operations = Object.values(doc.paths).flatMap((item) => Object.keys(item));
    expect(operations).toHaveLength(routes.length);
  });

  it("resolves every $ref to a component", () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      const [, kind, name] = /#\/components\/(\w+)\/(\w+)/.exec(ref)!;
      expect(doc.components[kind as "schemas" | "responses"], ref).toHaveProperty(name!);
    }
  });

  it("describes operations, parameters and properties with the contract's comments", () => {
    const reply = doc.paths["/v1/threads/{threadId}/replies"]!.post!;
    expect(reply.description).toMatch(/^Replies inside a thread to a target message\. .* Needs the API key scope mailbox:send\.$/);
    expect(reply.parameters.find((p) => p.name === "threadId")?.description).toBe("The thread id.");
    const body = reply.requestBody!.content["application/json"]!.schema;
    expect(body.properties?.targetMessageId?.description).toBe("The message being replied to; required.");
    expect(doc.components.schemas.Inbox?.properties?.domainId?.description).toMatch(/domain/);
    // Comments are joined from the source's wrapped lines.
    expect(reply.description).not.toContain("\n");
  });

  it("writes Inbox.domainId as a required nullable string", () => {
    const inbox = schema("Inbox");
    expect(inbox.properties?.domainId).toEqual({ type: ["string", "null"] });
    expect(inbox.required).toContain("domainId");
    expect(inbox.additionalProperties).toBe(false);
  });

  it("leaves Message.html and Message.inboundSecurity optional and not nullable", () => {
    const message = schema("Message");
    expect(message.properties?.html).toEqual({ type: "string" });
    expect(message.properties?.inboundSecurity).toEqual({ $ref: "#/components/schemas/InboundSecurity" });
    expect(message.required).not.toContain("html");
    expect(message.required).not.toContain("inboundSecurity");
    // present_with: written only beside inboundSecurity.
    expect(message.required).not.toContain("extracted");
    expect(message.required).toContain("attachments");
    expect(message.required).toContain("inReplyTo");
  });

  it("makes ListInboxesResponse.nextCursor nullable and required", () => {
    const list = schema("ListInboxesResponse");
    expect(list.properties?.nextCursor).toEqual({ type: ["string", "null"] });
    expect(list.required).toEqual(["inboxes", "nextCursor"]);
  });

  it("types timestamps as date-times with milliseconds and nullable messages as oneOf null", () => {
    const createdAt = schema("Inbox").properties?.createdAt;
    expect(createdAt).toMatchObject({ type: ["string", "null"], format: "date-time" });
    expect(new RegExp(createdAt!.pattern!).test("2026-01-02T03:04:05.000Z")).toBe(true);
    expect(new RegExp(createdAt!.pattern!).test("2026-01-02T03:04:05Z")).toBe(false);
    expect(schema("Message").properties?.from).toEqual({
      oneOf: [{ $ref: "#/components/schemas/Address" }, { type: "null" }],
    });
    expect(schema("ApiKeyProfile").properties?.inboxIds).toEqual({ type: ["array", "null"], items: { type: "string" } });
  });

  it("requires the idempotency-key header on POST /v1/webhooks with the contract's length and pattern", () => {
    const header = parameter(operation("post", "/v1/webhooks"), "idempotency-key");
    expect(header).toEqual({
      name: "idempotency-key",
      in: "header",
      required: true,
      schema: { type: "string", minLength: 8, maxLength: 200, pattern: "^[A-Za-z0-9._:-]+$" },
    });
  });

  it("bounds the optional limit query parameter to 1..100", () => {
    const limit = parameter(operation("get", "/v1/inboxes"), "limit");
    expect(limit.required).toBe(false);
    expect(limit.schema).toEqual({ type: "integer", format: "int32", minimum: 1, maximum: 100 });
  });

  it("builds request bodies from the buf.validate rules, refusing other properties", () => {
    const body = operation("post", "/v1/inboxes").requestBody?.content["application/json"]?.schema;
    expect(body?.required).toEqual(["localPart", "displayName"]);
    expect(body?.additionalProperties).toBe(false);
    expect(body?.properties?.domainId).toEqual({ type: ["string", "null"], format: "uuid" });
    const webhook = operation("post", "/v1/webhooks").requestBody?.content["application/json"]?.schema;
    expect(webhook?.properties?.url).toMatchObject({ maxLength: 2048, pattern: "^https://" });
    expect(webhook?.properties?.events).toEqual({
      type: "array",
      items: { type: "string", enum: ["message.received", "submission.held"] },
      minItems: 1,
      maxItems: 2,
      uniqueItems: true,
    });
    const reply = operation("post", "/v1/threads/{threadId}/replies").requestBody;
    expect(reply?.content["application/json"]?.schema.required).toEqual(["targetMessageId"]);
    expect(doc.paths["/v1/threads/{threadId}/replies"]?.post?.requestBody?.description).toContain("text or html is required");
  });

  it("documents 201 for a new webhook and 200 for an exact replay, with the same schema", () => {
    const { responses } = operation("post", "/v1/webhooks");
    const ref = { $ref: "#/components/schemas/CreateWebhookResponse" };
    expect(responses[201]).toMatchObject({ content: { "application/json": { schema: ref } } });
    expect(responses[200]).toMatchObject({ content: { "application/json": { schema: ref } } });
  });

  it("documents 204 without content for DELETE /v1/inboxes/{inboxId}", () => {
    const { responses } = doc.paths["/v1/inboxes/{inboxId}"]!.delete!;
    expect(responses[204]).toEqual({ description: "No content." });
    expect(responses[200]).toBeUndefined();
  });

  it("answers with the response field alone when the route names one", () => {
    const schemaOf = (path: string) => operation("get", path).responses[200];
    expect(schemaOf("/v1/inboxes/{inboxId}")).toMatchObject({
      content: { "application/json": { schema: { $ref: "#/components/schemas/Inbox" } } },
    });
    const download = schemaOf("/v1/messages/{messageId}/attachments/{attachmentId}");
    expect(download).toMatchObject({
      content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
    });
    expect(Object.keys((download as { headers: object }).headers).sort()).toEqual([
      "Cache-Control",
      "Content-Disposition",
      "Content-Length",
      "Content-Security-Policy",
      "X-Content-Type-Options",
    ]);
  });

  it("gives every operation the shared error responses, and 501 only to those not served whole", () => {
    for (const route of routes) {
      const { responses } = operation(route.verb.toLowerCase(), openApiPath(route));
      for (const status of [400, 401, 403, 429, 500, 503]) {
        expect(responses[status], `${route.method.name} ${status}`).toBeDefined();
      }
      if (route.pathFields.length > 0) expect(responses[404]).toBeDefined();
      const unserved = route.method.input.fields.some((f) => getOption(f, fieldRule).unimplemented || getOption(f, fieldRule).unimplementedValues.length > 0);
      expect(responses[501] !== undefined, route.method.name).toBe(route.unimplemented || unserved);
    }
    const served = ["CreateInbox", "GetMe", "CreateUpload", "GetSubmission"];
    expect(routes.filter((r) => served.includes(r.method.name)).map((r) => operation(r.verb.toLowerCase(), openApiPath(r)).responses[501])).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(doc.components.schemas.Error).toEqual({
      type: "object",
      properties: { error: expect.any(Object), message: expect.any(Object) },
      required: ["error", "message"],
      additionalProperties: false,
    });
  });

  it("gives 429 a Retry-After header in seconds", () => {
    expect(operation("get", "/v1/me").responses[429]).toEqual({ $ref: "#/components/responses/RateLimited" });
    expect(doc.components.responses.RateLimited?.headers?.["Retry-After"]?.schema).toEqual({ type: "integer", minimum: 1 });
  });

  it("states the text rule on every request string that could hold NUL, and the name rule on names", () => {
    const send = operation("post", "/v1/inboxes/{inboxId}/messages").requestBody!.content["application/json"]!.schema;
    expect(send.properties?.subject).toEqual({ type: "string", maxLength: 998, pattern: "^[^\\r\\n]*$", allOf: [{ pattern: TEXT_PATTERN }] });
    expect(send.properties?.text).toEqual({ type: ["string", "null"], pattern: TEXT_PATTERN });
    expect(schema("AddressInput").properties?.name).toEqual({ type: ["string", "null"], maxLength: 200, pattern: NAME_PATTERN });
    const inbox = operation("post", "/v1/inboxes").requestBody!.content["application/json"]!.schema;
    expect(inbox.properties?.displayName).toEqual({ type: "string", minLength: 1, maxLength: 200, pattern: NAME_PATTERN });
    expect(parameter(operation("get", "/v1/inboxes"), "cursor").schema).toEqual({ type: "string", minLength: 1, maxLength: 512, pattern: TEXT_PATTERN });
    const bulk = operation("post", "/v1/validate/bulk").requestBody!.content["application/json"]!.schema;
    expect(bulk.properties?.emails?.items).toEqual({ type: "string", minLength: 1, maxLength: 320, pattern: TEXT_PATTERN });
    // Closed sets need no text rule: an id pattern, an enum.
    expect(parameter(operation("get", "/v1/inboxes/{inboxId}"), "inboxId").schema).toEqual({ type: "string", pattern: "^inb_[a-f0-9]{24}$" });
    // Every request string of the document carries one of the two rules, or a pattern, enum or format that keeps NUL out.
    const strings: JsonSchema[] = [];
    const collect = (x: JsonSchema | undefined): void => {
      if (!x) return;
      if (x.type === "string" || (Array.isArray(x.type) && x.type.includes("string") && !x.type.includes("number"))) strings.push(x);
      for (const child of [...Object.values(x.properties ?? {}), x.items, ...(x.oneOf ?? [])]) collect(child);
    };
    for (const op of Object.values(doc.paths).flatMap((item) => Object.values(item))) {
      for (const p of op.parameters) collect(p.schema);
      collect(op.requestBody?.content["application/json"]?.schema);
    }
    for (const [name, component] of Object.entries(doc.components.schemas)) if (name.endsWith("Input")) collect(component);
    expect(strings.length).toBeGreaterThan(20);
    for (const x of strings) {
      const patterns = [x.pattern, ...(x.allOf ?? []).map((p) => p.pattern)].filter((p): p is string => p !== undefined);
      expect(patterns.some((p) => !mayMatchNul(p)) || x.enum !== undefined || x.format === "uuid", JSON.stringify(x)).toBe(true);
    }
    for (const p of [TEXT_PATTERN, NAME_PATTERN, ...Object.values(FORMATS).map((f) => f.pattern ?? "^$")]) {
      expect([p, mayMatchNul(p)]).toEqual([p, false]);
    }
  });

  it.each([
    ["^[A-Za-z0-9._:-]+$", false],
    ["^inb_[a-f0-9]{24}$", false],
    ["^[A-Za-z0-9_+-]+(\\.[A-Za-z0-9_+-]+)*$", false],
    ["^[^\\x00-\\x1f]*$", false],
    ["^[^\\r\\n]*$", true],
    ["^[^\\s@]+@[^\\s@]+$", true],
    ["^a.b$", true],
    ["^\\x00$", true],
    ["^[\\x00-\\x1f]$", true],
    ["^\\S+$", true],
    ["^https://", true],
    ["^a$|^b", true],
    ["^(a|b)$", false],
  ])("knows whether the pattern %s might match NUL (%s)", (pattern, may) => {
    expect(mayMatchNul(pattern)).toBe(may);
    // Conservative: a pattern said not to match NUL never does.
    if (!may) expect(new RegExp(pattern, "u").test("\u0000")).toBe(false);
  });

  it("gives addresses the email format with the pattern of what sending accepts", () => {
    const email = schema("AddressInput").properties?.email;
    expect(email).toMatchObject({ type: "string", format: "email", minLength: 3, maxLength: 254 });
    const pattern = new RegExp(FORMATS.email!.pattern!, "u");
    expect(email?.allOf).toEqual([{ pattern: FORMATS.email!.pattern }]);
    const accepts = (address: string) => {
      try {
        parseOutboundAddress({ email: address }, "to[0]");
        return true;
      } catch {
        return false;
      }
    };
    for (const address of [
      "alice@example.com", "Alice.Smith+tag@Mail.Example.COM", "o'brien!#$%&*/=?^_`{|}~-@example.org", "a@b-c.example",
      "x@bücher.de", "x@münchen.рф", "x@example.xn--p1ai", "0@0.0.com",
      "0@0", "a@b", "a@0.0", "a@b.c0", "a..b@example.com", ".a@example.com", "a b@example.com", "é@example.com",
      '"quoted"@example.com', '"two words"@example.com', "a@[127.0.0.1]", "Alice <alice@example.com>", "a@example.com.", "a@b_c.example", "@example.com",
    ]) {
      expect([address, pattern.test(address)]).toEqual([address, accepts(address)]);
    }
  });

  it("gives a domain to register the idn-hostname format with the pattern of what registration accepts", () => {
    const domain = operation("post", "/v1/domains").requestBody!.content["application/json"]!.schema.properties?.domain;
    expect(domain).toMatchObject({ type: "string", format: "idn-hostname", minLength: 1, maxLength: 253, pattern: FORMATS["idn-hostname"]!.pattern });
    const pattern = new RegExp(FORMATS["idn-hostname"]!.pattern!, "u");
    const accepts = (name: string) => {
      try {
        registrableName(name, "agents.test");
        return true;
      } catch {
        return false;
      }
    };
    // Not said by the pattern: the managed domain and special-use names (.localhost, .invalid), refused by name.
    for (const name of [
      "example.com", "Mail.Example.COM", "a-b.example", "bücher.example", "BÜCHER.Example", "xn--bcher-kva.example", "example.com.",
      "00", "0.0", "192.0.2.1", "0x7f.1", "example.123", "localhost", "-bad.example", "under_score.example", "a..b.example", "[2001:db8::1]",
    ]) {
      expect([name, pattern.test(name)]).toEqual([name, accepts(name)]);
    }
  });

  it("gives sender rule entries the pattern of their CEL rule (protovalidate's RE2) and the text rule", () => {
    const settings = schema("SenderRuleSettingsInput");
    for (const list of ["allow", "block"]) {
      expect(settings.properties?.[list]?.items).toMatchObject({ type: "string", maxLength: 254, pattern: FORMATS["sender-rule-entry"]!.pattern });
    }
    const pattern = new RegExp(FORMATS["sender-rule-entry"]!.pattern!, "u");
    const validator = createValidator();
    const accepts = (entry: string) =>
      textProblem(entry) === undefined && validator.validate(SenderRuleSettingsSchema, create(SenderRuleSettingsSchema, { block: [entry] })).kind === "valid";
    for (const entry of [
      "alice@example.com", "example.com", "Partner.Example", "xn--bcher-kva.example", "0", "a-b.c", "o'brien+x@sub.example.org", "é@example.com",
      "\u000b@example.com", "\u00a0@example.com", "a\u0000b@example.com", "0".repeat(63), "0".repeat(64), "bücher.example", "a b@example.com",
      "a\tb@example.com", "@example.com", "a@@example.com", "-a.example", "a-.example", "a..example", "example.com.", "a@b@example.com", "",
    ]) {
      expect([entry, pattern.test(entry)]).toEqual([entry, accepts(entry)]);
    }
  });

  it("describes metadata as a bounded JSON object of text, and webhook URLs as https URIs", () => {
    const send = operation("post", "/v1/send").requestBody!.content["application/json"]!.schema;
    expect(doc.paths["/v1/send"]?.post?.requestBody?.content["application/json"]?.schema.properties?.metadata?.description).toMatch(
      /^Free-form metadata .* At most 16384 bytes as compact UTF-8 JSON\.$/,
    );
    expect(send.properties?.metadata).toEqual({
      type: ["object", "null"],
      maxProperties: 50,
      propertyNames: { pattern: "^[A-Za-z0-9_.:-]{1,64}$" },
      additionalProperties: { $ref: "#/components/schemas/JsonValue" },
    });
    expect(JSON.stringify(schema("JsonValue"))).toContain(JSON.stringify(TEXT_PATTERN));
    const webhook = operation("post", "/v1/webhooks").requestBody!.content["application/json"]!.schema;
    expect(webhook.properties?.url).toEqual({ type: "string", format: "uri", minLength: 9, maxLength: 2048, pattern: "^https://", allOf: [{ pattern: TEXT_PATTERN }] });
  });

  it("lets a request field with presence be null, and a required or implicit one not", () => {
    const send = operation("post", "/v1/send").requestBody!.content["application/json"]!.schema;
    expect(send.properties?.replyTo).toEqual({ oneOf: [{ $ref: "#/components/schemas/AddressInput" }, { type: "null" }] });
    expect(send.properties?.html).toMatchObject({ type: ["string", "null"] });
    expect(send.properties?.from).toEqual({ $ref: "#/components/schemas/AddressInput" });
    expect(send.properties?.text).toMatchObject({ type: "string", minLength: 1 });
    expect(send.properties?.to).toMatchObject({ type: "array", minItems: 1, uniqueItems: true });
  });

  it("says text or html is required as anyOf, when both are body fields", () => {
    for (const path of ["/v1/inboxes/{inboxId}/messages", "/v1/threads/{threadId}/replies"]) {
      const body = operation("post", path).requestBody!.content["application/json"]!.schema;
      expect(body.anyOf).toEqual([
        { required: ["text"], properties: { text: { not: { type: "null" } } } },
        { required: ["html"], properties: { html: { not: { type: "null" } } } },
      ]);
    }
  });

  it("describes bytes as exactly the base64 the JSON face decodes: a generated example is never refused", () => {
    const pattern = new RegExp(REQUEST_BASE64);
    const decodes = (s: string) => {
      try {
        base64Decode(s);
        return true;
      } catch {
        return false;
      }
    };
    // Found by schemathesis: 9 characters (one past two groups) passed the pattern and failed the decoder.
    const given = ["", "aGVsbG8=", "aGVsbG8", "aGVsbA", "aGVsbA==", "aGVs bG8=\r\n", "-_-_", "80h7usWo8", "A", "A=", "AB=C", "AB=CD", "a b", "not base64!", "\ro", "ab=="];
    const alphabet = "AZaz09+/-_= \n!";
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 2_000; i++) given.push(Array.from({ length: Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(""));
    for (const s of given) expect([s, pattern.test(s)]).toEqual([s, decodes(s)]);
  });

  it("describes an attachment's source as exactly one of contentBase64, uploadId and url, with filename required beside contentBase64", () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const components = JSON.parse(JSON.stringify(doc.components.schemas)) as Record<string, JsonSchema>;
    const valid = ajv.compile({ $ref: "#/$defs/OutgoingAttachmentInput", $defs: components });
    const upload = "upl_0123456789abcdef01234567";
    const cases: [object, boolean][] = [
      [{ contentBase64: "aGVsbG8=", filename: "a.txt" }, true],
      [{ uploadId: upload }, true],
      [{ url: "https://files.example.com/a.pdf", contentId: "logo@x", disposition: "inline" }, true],
      [{ uploadId: upload, url: null }, true],
      [{ contentBase64: "aGVsbG8=" }, false],
      [{ uploadId: upload, url: "https://files.example.com/a.pdf" }, false],
      [{ filename: "a.txt" }, false],
      [{ uploadId: upload, disposition: "hidden" }, false],
      [{ contentBase64: "not base64!", filename: "a" }, false],
    ];
    for (const [attachment, accepted] of cases) expect([attachment, valid(attachment)]).toEqual([attachment, accepted]);
  });

  it("takes an upload's raw bytes as application/octet-stream, its filename from the query, and answers 422 but never 415", () => {
    const op = operation("post", "/v1/uploads");
    expect(op.requestBody).toEqual({ required: true, content: { "application/octet-stream": { schema: { type: "string", format: "binary", minLength: 1 } } } });
    expect(parameter(op, "filename")).toEqual({ name: "filename", in: "query", required: true, schema: { type: "string", minLength: 1, maxLength: 255, pattern: TEXT_PATTERN } });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["201", "413", "422", "503"]));
    expect(op.responses).not.toHaveProperty("415");
  });

  it("marks nothing as not served: every operation, field and value of the contract is", () => {
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [verb, op] of Object.entries(item)) {
        expect([verb, path, (op as Operation)["x-not-implemented"], Object.keys((op as Operation).responses)]).toEqual([verb, path, undefined, expect.not.arrayContaining(["501"])]);
      }
    }
  });

  it("describes a server-streaming RPC as Server-Sent Events whose items carry the event id and its JSON", () => {
    const op = operation("get", "/v1/events:stream");
    const ok = op.responses["200"] as Response;
    expect(Object.keys(ok.content!)).toEqual(["text/event-stream"]);
    expect(ok.content!["text/event-stream"]!["x-itemSchema"]).toEqual({
      type: "object",
      properties: { id: { type: "string" }, data: { type: "string", contentMediaType: "application/json", contentSchema: { $ref: "#/components/schemas/Event" } } },
      required: ["data"],
    });
    expect(parameter(op, "last-event-id")).toMatchObject({ in: "header", required: false });
    expect((doc.paths["/v1/events:stream"]!.get!.responses["200"] as Response).description).toContain("Last-Event-ID");
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["404", "410", "429"]));
  });

  it("serves WaitForMessage at its custom verb, with the wait's bounds as the contract's", () => {
    const op = operation("get", "/v1/inboxes/{inboxId}/messages:wait");
    expect(parameter(op, "timeoutSeconds").schema).toMatchObject({ minimum: 1, maximum: 25 });
    expect((op.responses["200"] as Response).content!["application/json"]!.schema).toEqual({ $ref: "#/components/schemas/WaitForMessageResponse" });
    expect(schema("Message").properties!.extracted).toBeDefined();
  });
  /** The schema a link's `$response.body#/…` pointer reaches in the answer it is read from ($refs followed). */
  function schemaAt(answer: JsonSchema, pointer: string): JsonSchema {
    let at: JsonSchema | undefined = answer;
    for (const token of pointer.split("/").slice(1)) {
      while (at?.$ref) at = doc.components.schemas[at.$ref.split("/").pop()!];
      at = /^\d+$/.test(token) ? at?.items : at?.properties?.[token];
    }
    while (at?.$ref) at = doc.components.schemas[at.$ref.split("/").pop()!];
    if (!at) throw new Error(`${pointer} reaches nothing`);
    return at;
  }

  it("links answers to the operations that take an id they carry, never from a nullable field", () => {
    const links = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([verb, op]) =>
        Object.entries(op.responses).flatMap(([status, response]) =>
          Object.entries((response as Response).links ?? {}).map(([name, link]) => ({ from: `${verb.toUpperCase()} ${path} ${status}`, name, link, response: response as Response })),
        ),
      ),
    );
    const targets = new Map(Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => [op.operationId, op] as const)));
    expect(links.length).toBeGreaterThan(20);
    for (const { from, name, link, response } of links) {
      const target = targets.get(link.operationId)!;
      expect(target, `${from} → ${name}`).toBeDefined();
      const pathParams = target.parameters.filter((p) => p.in === "path").map((p) => `path.${p.name}`);
      expect(Object.keys(link.parameters).sort(), `${from} → ${name}`).toEqual(pathParams.sort());
      for (const expression of Object.values(link.parameters)) {
        const reached = schemaAt(response.content!["application/json"]!.schema, expression.replace(/^\$response\.body#/, ""));
        expect(reached.type, `${from} → ${name}: ${expression}`).toBe("string");
      }
      expect(link.description).toMatch(/^(GET|POST|PUT|DELETE) \/v1\/\S+ with \w+ from .+\.$/);
    }
    const linked = (from: string, to: string) => links.filter((l) => l.from === from && l.link.operationId === to).map((l) => l.link.parameters);
    expect(linked("POST /v1/inboxes 201", "getInbox")).toEqual([{ "path.inboxId": "$response.body#/id" }]);
    expect(linked("GET /v1/inboxes 200", "getInbox")).toEqual([{ "path.inboxId": "$response.body#/inboxes/0/id" }]);
    expect(linked("GET /v1/inboxes/{inboxId}/threads 200", "getThread")).toEqual([{ "path.threadId": "$response.body#/threads/0/id" }]);
    // An inbox's domainId is null for a managed address: no link to the domain operations from it.
    for (const from of ["POST /v1/inboxes 201", "GET /v1/inboxes 200", "GET /v1/inboxes/{inboxId} 200"]) expect(linked(from, "getDomain")).toEqual([]);
    // Nor from a complaint's submissionId, null when the report named none; a listed submission's own id is linked.
    expect(links.filter((l) => l.link.operationId === "getSubmission" && l.from.startsWith("GET /v1/complaints"))).toEqual([]);
    expect(linked("GET /v1/submissions 200", "getSubmission")).toEqual([{ "path.submissionId": "$response.body#/submissions/0/id" }]);
  });
});
