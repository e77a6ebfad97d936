import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { buildOpenApi, openApiPath, type JsonSchema, type Operation, type Parameter } from "../../src/rest/openapi.js";
import { buildRouteTable } from "../../src/rest/routes.js";
import { CONTRACT_SERVICES } from "../../src/rpc/services.js";

const routes = buildRouteTable(CONTRACT_SERVICES);
const doc = buildOpenApi(routes);

function operation(verb: string, path: string): Operation {
  const op = doc.paths[path]?.[verb];
  if (!op) throw new Error(`no ${verb} ${path}`);
  return op;
}

function schema(name: string): JsonSchema {
  const s = doc.components.schemas[name];
  if (!s) throw new Error(`no schema ${name}`);
  return s;
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
    expect(message.required).not.toContain("attachments");
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
    expect(body?.properties?.domainId).toEqual({ type: "string", format: "uuid" });
    const webhook = operation("post", "/v1/webhooks").requestBody?.content["application/json"]?.schema;
    expect(webhook?.properties?.url).toMatchObject({ maxLength: 2048, pattern: "^https://" });
    expect(webhook?.properties?.events).toEqual({
      type: "array",
      items: { type: "string", enum: ["message.received"] },
      minItems: 1,
      maxItems: 1,
    });
    const reply = operation("post", "/v1/threads/{threadId}/replies").requestBody;
    expect(reply?.content["application/json"]?.schema.required).toEqual(["targetMessageId"]);
    expect(reply?.description).toContain("text or html is required");
  });

  it("documents 201 for a new webhook and 200 for an exact replay, with the same schema", () => {
    const { responses } = operation("post", "/v1/webhooks");
    const ref = { $ref: "#/components/schemas/CreateWebhookResponse" };
    expect(responses[201]).toMatchObject({ content: { "application/json": { schema: ref } } });
    expect(responses[200]).toMatchObject({ content: { "application/json": { schema: ref } } });
  });

  it("documents 204 without content for DELETE /v1/inboxes/{inboxId}", () => {
    const { responses } = operation("delete", "/v1/inboxes/{inboxId}");
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

  it("gives every operation the shared error responses, and 501 only to unimplemented ones", () => {
    for (const route of routes) {
      const { responses } = operation(route.verb.toLowerCase(), openApiPath(route));
      for (const status of [400, 401, 403, 429, 500, 503]) {
        expect(responses[status], `${route.method.name} ${status}`).toBeDefined();
      }
      if (route.pathFields.length > 0) expect(responses[404]).toBeDefined();
      expect(responses[501] !== undefined).toBe(route.unimplemented);
    }
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
});
