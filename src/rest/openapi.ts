// The OpenAPI 3.1 description of the /v1 JSON face, built from the same route table and descriptors the gateway
// serves. Response schemas mirror json.ts (nulls, omitted fields, timestamps); request schemas carry the
// buf.validate rules and those of options.proto (text and names, formats, JSON object bounds, null for a field with
// presence), so generated clients and fuzzers accept what the service accepts. Descriptions are the contract's
// comments (gen/mailbox/v1/docs.ts). The same builder writes the MCP tools' schemas (messageSchema).
import { getOption, isFieldSet, ScalarType, type DescField, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import {
  field as fieldRules,
  Ignore,
  message as messageRules,
  oneof as oneofRules,
  RepeatedRulesSchema,
  StringRulesSchema,
  type FieldRules,
  type Int32Rules,
  type RepeatedRules,
  type StringRules,
} from "../../gen/buf/validate/validate_pb.js";
import { field as fieldRule, method as methodRule, type FieldRule, type JsonObjectRule } from "../../gen/mailbox/v1/options_pb.js";
import { NAME_PATTERN, TEXT_PATTERN } from "../text-rule.js";
import { docOf } from "./docs.js";
import { hasPresence } from "./json.js";
import { linksOf, type Link } from "./openapi-links.js";
import { HTTP_BODY, type Route } from "./routes.js";

type JsonType = "string" | "number" | "integer" | "boolean" | "object" | "array" | "null";

export interface JsonSchema {
  $ref?: string;
  type?: JsonType | JsonType[];
  format?: string;
  description?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  enum?: string[];
  const?: string;
  contentEncoding?: string;
  contentMediaType?: string;
  contentSchema?: JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  maxProperties?: number;
  propertyNames?: JsonSchema;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  not?: JsonSchema;
  if?: JsonSchema;
  then?: JsonSchema;
  $defs?: Record<string, JsonSchema>;
}

export interface Header {
  description?: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  description?: string;
  required: boolean;
  schema: JsonSchema;
}

export interface MediaTypes {
  /** x-itemSchema: one item of a sequential media type (an event of text/event-stream), as OpenAPI 3.2's itemSchema. */
  [mediaType: string]: { schema: JsonSchema; "x-itemSchema"?: JsonSchema };
}

export interface Response {
  description: string;
  headers?: Record<string, Header>;
  content?: MediaTypes;
  /** The operations that take an id this answer carries (never from a nullable field). */
  links?: Record<string, Link>;
}

export interface RequestBody {
  description?: string;
  required: boolean;
  content: MediaTypes;
}

export interface Operation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security?: Record<string, string[]>[];
  parameters: Parameter[];
  requestBody?: RequestBody;
  responses: Record<string, Response | { $ref: string }>;
  /**
   * What of the operation is not served yet and answers 501 not_implemented: all of it (true), or the JSON fields and
   * the values of fields its descriptions name. For clients and test generators that leave them out.
   */
  "x-not-implemented"?: true | { fields: string[]; values: Record<string, string[]> };
}

export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  security: Record<string, string[]>[];
  tags: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, Response>;
    securitySchemes: Record<string, { type: "apiKey"; in: "header"; name: string; description: string }>;
  };
}

const OPENAPI_VERSION = "0.1.0-private-beta";

const DESCRIPTION = [
  "Email inboxes for software agents. Every operation is also an RPC of the mailbox.v1 protobuf contract,",
  "from which this document is generated. Timestamps are UTC ISO 8601 strings with exactly three fractional",
  "digits. Fields typed as nullable are sent as JSON null when unset; optional fields are omitted. In a request, a",
  "nullable field may be null or omitted alike. Every request string is Unicode text without NUL (U+0000) or",
  "unpaired surrogates; names (display names, the names of addresses) also have no control or bidirectional-override",
  "characters. Errors are {error, message}; a 429 carries Retry-After.",
].join(" ");

/** The schema of every error body; components.schemas reserves its name. */
const ERROR_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    error: { type: "string", description: "The machine-readable error code, such as invalid_request." },
    message: { type: "string", description: "What went wrong, in words." },
  },
  required: ["error", "message"],
  additionalProperties: false,
};

const ERROR_RESPONSES: Readonly<Record<number, { name: string; description: string }>> = {
  400: { name: "InvalidRequest", description: "The request is invalid (invalid_request, invalid_json)." },
  401: { name: "Unauthenticated", description: "The API key is missing, unknown, expired, revoked or not usable from this address." },
  403: { name: "Forbidden", description: "Authenticated, but blocked by the key's scopes, restrictions or organization policy." },
  404: { name: "NotFound", description: "The resource does not exist in the caller's organization." },
  409: {
    name: "Conflict",
    description:
      "A conflict: inbox_address_unavailable, idempotency_key_conflict, webhook_endpoint_exists, " +
      "webhook_secret_replay_expired, or a delete already in progress.",
  },
  410: { name: "Gone", description: "Gone: idempotency_result_expired, webhook_endpoint_deleted or cursor_expired." },
  413: {
    name: "PayloadTooLarge",
    description: "The request body is too large (payload_too_large), or the page is (page_too_large): retry with a smaller limit.",
  },
  415: { name: "UnsupportedMediaType", description: "The request body is not application/json." },
  422: {
    name: "Unprocessable",
    description:
      "The request is well-formed but its content is refused: attachment_infected, attachment_not_clean, " +
      "attachment_url_refused or attachment_url_failed.",
  },
  429: { name: "RateLimited", description: "Rate limited; Retry-After gives the seconds to wait." },
  500: { name: "InternalError", description: "An internal error." },
  501: { name: "NotImplemented", description: "The operation is not implemented yet (not_implemented)." },
  503: { name: "Unavailable", description: "The service is unavailable; retry later." },
};

/** Any other error status, such as 504 on a timeout. */
const OTHER_ERROR = { name: "OtherError", description: "Any other error." };

const RETRY_AFTER: Record<string, Header> = {
  "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer", minimum: 1 } },
};

// The formats of options.proto (FieldRule.format): what the service's own checks accept, as JSON Schema formats with
// patterns that test/unit/openapi.test.ts holds to those checks. A domain is labels of letters, digits and inner
// hyphens, or internationalised ones (converted to A-labels), the last of them letters, an A-label or
// internationalised; an address has a dot-atom local part of ASCII.
const IDN_LABEL = "[^\\x00-\\x2c\\x2e\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]*[^\\x00-\\x7f][^\\x00-\\x2c\\x2e\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]*";
const DOMAIN = `(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?|${IDN_LABEL})\\.)+(?:[A-Za-z]{2,63}|[Xx][Nn]--[A-Za-z0-9-]{1,59}|${IDN_LABEL})`;
const DOT_ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*";
export const FORMATS: Readonly<Record<string, JsonSchema>> = {
  // A quoted local part is accepted only when it is a dot-atom in quotes, the same mailbox.
  email: { format: "email", pattern: `^(?:${DOT_ATOM}|"${DOT_ATOM}")@${DOMAIN}$` },
  "idn-hostname": { format: "idn-hostname", pattern: `^${DOMAIN}\\.?$` },
  uri: { format: "uri" },
  // The CEL rule of sender_rule_service.proto, whose matches() is RE2 (its \s is exactly [\t\n\f\r ]), with the
  // text rule's NUL left out.
  "sender-rule-entry": {
    pattern: "^(?:[^\\u0000\\t\\n\\f\\r @]+@)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
  },
};

const B64 = "[A-Za-z0-9+/_-]";
const B64_SPACE = "[ \\t\\r\\n]*";
/**
 * What the JSON face reads as bytes, exactly as protobuf-es's decoder does: base64 or base64url, padded or not, white
 * space ignored, "=" ending a group; after the last "=" the characters left may not be one more than a whole group
 * (four), which decodes to no byte and is refused.
 */
export const REQUEST_BASE64 =
  `^(?:[A-Za-z0-9+/_ \\t\\r\\n-]*=)*${B64_SPACE}(?:${B64}${B64_SPACE}${B64}${B64_SPACE}${B64}${B64_SPACE}${B64}${B64_SPACE})*` +
  `(?:${B64}${B64_SPACE}${B64}${B64_SPACE}(?:${B64}${B64_SPACE})?)?$`;

/** The component every free-form JSON value of a request refers to. */
const JSON_VALUE = "JsonValue";

const SUCCESS_TEXT: Readonly<Record<number, string>> = { 200: "OK.", 201: "Created.", 202: "Accepted." };

// The headers spec endpoint rule 6 requires on attachment downloads.
const DOWNLOAD_HEADERS: Record<string, Header> = {
  "Cache-Control": { required: true, schema: { type: "string", const: "private, no-store" } },
  "Content-Disposition": {
    required: true,
    description: "An attachment disposition with the sanitised filename and a UTF-8 filename*: untrusted display metadata.",
    schema: { type: "string", pattern: "^attachment" },
  },
  "Content-Length": { required: true, schema: { type: "integer", minimum: 0 } },
  "Content-Security-Policy": { required: true, schema: { type: "string", const: "default-src 'none'; sandbox" } },
  "X-Content-Type-Options": { required: true, schema: { type: "string", const: "nosniff" } },
};

// json.ts writes Date.toISOString(): always milliseconds and Z.
const TIMESTAMP: JsonSchema = {
  type: "string",
  format: "date-time",
  pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$",
  description: "UTC, with exactly three fractional digits, e.g. 2026-01-02T03:04:05.000Z.",
};

export function buildOpenApi(routes: readonly Route[]): OpenApiDocument {
  const schemas = new SchemaBuilder("#/components/schemas/");
  const paths: Record<string, Record<string, Operation>> = {};
  const operationIds = new Set<string>();
  const links = linksOf(routes, operationIdOf, openApiPath);
  for (const route of routes) {
    const operation = operationOf(route, schemas, links.get(route));
    if (operationIds.has(operation.operationId)) {
      throw new Error(`two RPCs share the OpenAPI operationId ${operation.operationId}`);
    }
    operationIds.add(operation.operationId);
    (paths[openApiPath(route)] ??= {})[route.verb.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: { title: "Agent Mailbox API", version: OPENAPI_VERSION, description: DESCRIPTION },
    servers: [{ url: "/" }],
    security: [{ apiKey: [] }],
    tags: [...new Set(routes.map((r) => r.method.parent.name))].map((name) => ({ name })),
    paths,
    components: {
      schemas: { Error: ERROR_SCHEMA, ...schemas.schemas },
      responses: errorResponses(),
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "The tenant API key." },
      },
    },
  };
}

/** The route template with its variables named by JSON name: /v1/inboxes/{inbox_id} → /v1/inboxes/{inboxId}. */
export function openApiPath(route: Route): string {
  return route.template.replace(/\{([a-z_][a-z0-9_]*)\}/g, (_, name: string) => {
    return `{${route.pathFields.find((f) => f.name === name)!.jsonName}}`;
  });
}

function operationIdOf(route: Route): string {
  return route.method.name[0]!.toLowerCase() + route.method.name.slice(1);
}

function operationOf(route: Route, schemas: SchemaBuilder, links: Record<string, Link> | undefined): Operation {
  const { method } = route;
  const requestBody = requestBodyOf(route, schemas);
  return {
    operationId: operationIdOf(route),
    summary: method.name.replace(/(?<=[a-z0-9])[A-Z]/g, (c) => ` ${c.toLowerCase()}`),
    description: descriptionOf(route),
    tags: [method.parent.name],
    // OpenAPI 3.1 lets an apiKey requirement name roles: here, the key scope the operation needs.
    ...(route.scope === "" ? {} : { security: [{ apiKey: [route.scope] }] }),
    parameters: parametersOf(route, schemas),
    ...(requestBody ? { requestBody } : {}),
    responses: responsesOf(route, schemas, links),
    ...notImplementedOf(route),
  };
}

function notImplementedOf(route: Route): Pick<Operation, "x-not-implemented"> {
  if (route.unimplemented) return { "x-not-implemented": true };
  const fields: string[] = [];
  const values: Record<string, string[]> = {};
  for (const field of route.method.input.fields) {
    const rule = getOption(field, fieldRule);
    if (rule.unimplemented) fields.push(field.jsonName);
    else if (rule.unimplementedValues.length > 0) values[field.jsonName] = [...rule.unimplementedValues];
  }
  return fields.length === 0 && Object.keys(values).length === 0 ? {} : { "x-not-implemented": { fields, values } };
}

function descriptionOf(route: Route): string {
  const { method } = route;
  const parts = [docOf(method) || `The ${method.parent.typeName}/${method.name} RPC.`];
  parts.push(route.scope === "" ? "Any valid API key may call it." : `Needs the API key scope ${route.scope}.`);
  if (route.unimplemented) parts.push("Not implemented yet: answers 501 not_implemented.");
  const unserved = unservedPartsOf(method.input);
  if (unserved.length > 0) parts.push(`Not implemented yet, answering 501 not_implemented when given: ${unserved.join("; ")}.`);
  return parts.join(" ");
}

/** The parts of a request the contract marks as not served yet (FieldRule.unimplemented, unimplemented_values). */
function unservedPartsOf(desc: DescMessage): string[] {
  return desc.fields.flatMap((field) => {
    const rule = getOption(field, fieldRule);
    if (rule.unimplemented) return [field.jsonName];
    return rule.unimplementedValues.length > 0 ? [`${field.jsonName} ${rule.unimplementedValues.join(", ")}`] : [];
  });
}

function parametersOf(route: Route, schemas: SchemaBuilder): Parameter[] {
  const parameter = (field: DescField, name: string, where: Parameter["in"]): Parameter => {
    const description = docOf(field);
    return {
      name,
      in: where,
      ...(description === "" ? {} : { description }),
      required: where === "path" || requiredInRequest(field),
      schema: schemas.value(field, "request"),
    };
  };
  return [
    ...route.pathFields.map((f) => parameter(f, f.jsonName, "path")),
    ...route.headerFields.map(({ header, field }) => parameter(field, header, "header")),
    ...route.queryFields.map((f) => parameter(f, f.jsonName, "query")),
  ];
}

function requestBodyOf(route: Route, schemas: SchemaBuilder): RequestBody | undefined {
  if (route.body === undefined) return undefined;
  if (route.rawBodyField) {
    return {
      description: `${docOf(route.rawBodyField)} Any media type: the Content-Type header is taken as the content's type.`,
      required: true,
      content: { "application/octet-stream": { schema: { type: "string", format: "binary", minLength: 1 } } },
    };
  }
  const schema = route.body === "*" ? schemas.requestMessage(route.method.input, route.bodyFields) : schemas.value(route.bodyFields[0]!, "request");
  // Message-level CEL rules are also described in words (has() alternatives are the only ones with a schema).
  const rules = getOption(route.method.input, messageRules).cel.map((r) => r.message).filter((m) => m !== "");
  return {
    ...(rules.length > 0 ? { description: `Also: ${rules.join("; ")}.` } : {}),
    required: route.bodyFields.some(requiredInRequest),
    content: { "application/json": { schema } },
  };
}

function responsesOf(route: Route, schemas: SchemaBuilder, links: Record<string, Link> | undefined): Operation["responses"] {
  const status = route.successStatus;
  const responses: Operation["responses"] = {
    [status]: { ...successResponse(route, schemas, SUCCESS_TEXT[status] ?? "Success."), ...(links ? { links } : {}) },
  };
  if (route.replayStatusField && status !== 200) {
    const flag = route.replayStatusField.jsonName;
    responses[200] = successResponse(route, schemas, `An exact retry: the original result, with ${flag} true.`);
  }
  for (const code of errorStatusesOf(route)) {
    responses[code] = { $ref: `#/components/responses/${ERROR_RESPONSES[code]!.name}` };
  }
  responses.default = { $ref: `#/components/responses/${OTHER_ERROR.name}` };
  return responses;
}

/** What every event stream of the JSON face is, beside the item schema of its events. */
const EVENT_STREAM_DESCRIPTION =
  "Server-Sent Events (text/event-stream) until the client leaves: each event an `id:` line (send the last one back " +
  "as Last-Event-ID to resume after it) and a `data:` line with one JSON value; lines starting with `:` are keep-alive " +
  "comments; an error after the stream opened is an `error` event whose data is the {error, message} body, and the end.";

function successResponse(route: Route, schemas: SchemaBuilder, description: string): Response {
  if (route.successStatus === 204) return { description: "No content." };
  const field = route.responseField;
  if (route.stream) {
    const data = field ? schemas.value(field, "response") : schemas.ref(route.method.output, "response");
    const itemSchema: JsonSchema = {
      type: "object",
      properties: {
        ...(route.stream.eventIdField ? { id: { type: "string", description: "The event's id." } } : {}),
        data: { type: "string", contentMediaType: "application/json", contentSchema: data },
      },
      required: ["data"],
    };
    return {
      description: `${description} ${EVENT_STREAM_DESCRIPTION}`,
      content: { "text/event-stream": { schema: { type: "string", description: EVENT_STREAM_DESCRIPTION }, "x-itemSchema": itemSchema } },
    };
  }
  if (field?.fieldKind === "scalar" && field.scalar === ScalarType.BYTES) {
    return {
      description,
      headers: DOWNLOAD_HEADERS,
      content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
    };
  }
  // The service always sets the field it answers with, so its null case (an unset field) is not documented.
  const schema = field ? schemas.value(field, "response") : schemas.ref(route.method.output, "response");
  return { description, content: { "application/json": { schema } } };
}

// The spec's per-operation statuses, listed generously from what the route can meet.
function errorStatusesOf(route: Route): number[] {
  const statuses = [400, 401, 403];
  // Path ids, body references (domainId, targetMessageId) and query ids (inboxId) name resources that may not exist.
  if (route.pathFields.length > 0 || route.body !== undefined || route.queryFields.some((f) => f.name.endsWith("_id"))) statuses.push(404);
  if (route.verb !== "GET") statuses.push(409);
  // Idempotent writes (idempotency_result_expired, webhook_endpoint_deleted) and paged reads (cursor_expired).
  if (route.headerFields.length > 0 || route.queryFields.some((f) => f.name === "cursor")) statuses.push(410);
  // The gateway reads (and bounds) a body on every route.
  statuses.push(413);
  // A raw body may be of any media type.
  if (route.body !== undefined && !route.rawBodyField) statuses.push(415);
  // Routes that carry content: attachments and uploads are scanned, and URL attachments fetched.
  if (carriesContent(route.method)) statuses.push(422);
  statuses.push(429, 500);
  if (route.unimplemented || unservedPartsOf(route.method.input).length > 0) statuses.push(501);
  statuses.push(503);
  return statuses;
}

function carriesContent(method: DescMethod): boolean {
  return getOption(method, methodRule).carriesMessageContent;
}

function errorResponses(): Record<string, Response> {
  const content: MediaTypes = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };
  const responses: Record<string, Response> = {};
  for (const [status, { name, description }] of Object.entries(ERROR_RESPONSES)) {
    responses[name] = status === "429" ? { description, headers: RETRY_AFTER, content } : { description, content };
  }
  responses[OTHER_ERROR.name] = { description: OTHER_ERROR.description, content };
  return responses;
}

/** Which side of the wire a schema describes: requests carry buf.validate rules, responses json.ts's nulls. */
export type Face = "request" | "response";

/**
 * The JSON Schema of a message as the JSON face reads it (request) or writes it (response), self-contained: the
 * messages it contains are under $defs. The MCP tools' input and output schemas; the OpenAPI document's come from
 * the same builder.
 */
export function messageSchema(desc: DescMessage, face: Face): JsonSchema {
  const builder = new SchemaBuilder("#/$defs/");
  const root = face === "request" ? builder.requestMessage(desc, desc.fields) : builder.responseObject(desc);
  return Object.keys(builder.schemas).length === 0 ? root : { ...root, $defs: builder.schemas };
}

class SchemaBuilder {
  readonly schemas: Record<string, JsonSchema> = {};
  /** Component name → the message and face it describes, to refuse two messages with one short name. */
  private readonly owners = new Map<string, string>([["Error", "the error body"]]);

  /** @param refBase where the components live: #/components/schemas/ in OpenAPI, #/$defs/ in a standalone schema. */
  constructor(private readonly refBase: string) {}

  /** A $ref to the component schema of a message, built on first use. */
  ref(desc: DescMessage, face: Face): JsonSchema {
    const name = face === "response" ? desc.name : `${desc.name}Input`;
    const owner = `${desc.typeName} (${face})`;
    const existing = this.owners.get(name);
    if (existing === undefined) {
      // Registered before building, so a message that contains itself refers to the component.
      this.owners.set(name, owner);
      this.schemas[name] = face === "response" ? this.responseObject(desc) : this.requestMessage(desc, desc.fields);
    } else if (existing !== owner) {
      throw new Error(`OpenAPI schema name ${name} would describe both ${existing} and ${owner}`);
    }
    return { $ref: `${this.refBase}${name}` };
  }

  /**
   * A request message whose properties are `fields` (all of them, or those of a body), with its has() alternatives
   * and its oneofs (at most one member given; exactly one when the oneof is required).
   */
  requestMessage(desc: DescMessage, fields: readonly DescField[]): JsonSchema {
    return allOf(this.requestObject(fields), [...presenceAlternatives(desc, fields), ...oneofAlternatives(desc, fields)]);
  }

  /** An object whose properties are request fields: required and constrained by their rules; null where json.ts reads it. */
  private requestObject(fields: readonly DescField[]): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    for (const field of fields) {
      const value = this.value(field, "request");
      properties[field.jsonName] = described(field, hasPresence(field) && !requiredInRequest(field) ? orNull(value) : value);
    }
    const required = fields.filter(requiredInRequest).map((f) => f.jsonName);
    return { type: "object", properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
  }

  /** The value of a field, without the null json.ts writes for (and reads as) an unset field with presence. */
  value(field: DescField, face: Face): JsonSchema {
    const rules = face === "request" ? rulesOf(field) : undefined;
    const rule = getOption(field, fieldRule);
    const scalar = (type: ScalarType, r: FieldRules | undefined): JsonSchema =>
      type === ScalarType.STRING && face === "request"
        ? requestString(r?.type.case === "string" ? r.type.value : undefined, rule)
        : type === ScalarType.BYTES && face === "request"
          ? { ...scalarSchema(type), pattern: REQUEST_BASE64 }
          : { ...scalarSchema(type), ...constraintsOf(r) };
    switch (field.fieldKind) {
      case "scalar":
        return scalar(field.scalar, rules);
      case "message":
        return this.messageValue(field.message, face, rule);
      case "list": {
        const repeated = rules?.type.case === "repeated" ? rules.type.value : undefined;
        const items =
          field.listKind === "scalar"
            ? scalar(field.scalar, repeated?.items)
            : field.listKind === "message"
              ? this.messageValue(field.message, face, rule)
              : unsupported(field);
        return { type: "array", items, ...itemCountOf(repeated), ...(face === "request" && rule.uniqueItems ? { uniqueItems: true } : {}) };
      }
      default:
        return unsupported(field);
    }
  }

  /** A free-form JSON object of a request, within its bounds, whose strings and keys are text. */
  private jsonObject(rule: JsonObjectRule | undefined): JsonSchema {
    const ref = { $ref: `${this.refBase}${JSON_VALUE}` };
    if (!this.owners.has(JSON_VALUE)) {
      this.owners.set(JSON_VALUE, "any JSON value of a request");
      this.schemas[JSON_VALUE] = {
        description: "Any JSON value whose strings and object keys are text.",
        anyOf: [
          { type: "string", pattern: TEXT_PATTERN },
          { type: ["number", "boolean", "null"] },
          { type: "array", items: ref },
          { type: "object", propertyNames: { pattern: TEXT_PATTERN }, additionalProperties: ref },
        ],
      };
    }
    const keyPatterns = [rule?.keyPattern ?? "", ...(rule?.keyPattern && !mayMatchNul(rule.keyPattern) ? [] : [TEXT_PATTERN])];
    return {
      type: "object",
      ...(rule?.maxJsonBytes ? { description: `At most ${rule.maxJsonBytes} bytes as compact UTF-8 JSON.` } : {}),
      ...(rule?.maxKeys ? { maxProperties: rule.maxKeys } : {}),
      propertyNames: patternsOf(keyPatterns),
      additionalProperties: ref,
    };
  }

  responseObject(desc: DescMessage): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const field of desc.fields) {
      const rule = getOption(field, fieldRule);
      const omittable = hasPresence(field) && rule.omitWhenUnset;
      const value = this.value(field, "response");
      properties[field.jsonName] = described(field, hasPresence(field) && !omittable ? orNull(value) : value);
      // json.ts writes every field, except unset omit_when_unset ones and present_with ones without their sibling.
      if (!omittable && rule.presentWith === "") required.push(field.jsonName);
    }
    return { type: "object", properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
  }

  private messageValue(desc: DescMessage, face: Face, rule: FieldRule): JsonSchema {
    switch (desc.typeName) {
      case HTTP_BODY:
        // On a JSON face (MCP tools; the /v1 face takes the raw body instead): its type and bytes, no extensions.
        return {
          type: "object",
          properties: {
            contentType: { type: "string", description: "The media type, type/subtype; application/octet-stream when empty." },
            data: { type: "string", contentEncoding: "base64", description: "The bytes, base64-encoded." },
          },
          required: ["data"],
          additionalProperties: false,
        };
      case "google.protobuf.Timestamp":
        return face === "response" ? TIMESTAMP : { type: "string", format: "date-time" };
      case "google.protobuf.Struct":
        return face === "response" ? { type: "object", additionalProperties: true } : this.jsonObject(rule.jsonObject);
      case "google.protobuf.ListValue":
        // The contract's lists (inbox ids, IPs, domains) hold strings.
        return { type: "array", items: { type: "string" } };
      case "google.protobuf.Value":
      case "google.protobuf.Duration":
        throw new Error(`OpenAPI: no schema for ${desc.typeName} yet`);
      default:
        return this.ref(desc, face);
    }
  }
}

function unsupported(field: DescField): never {
  throw new Error(`OpenAPI: no schema for ${field.parent.typeName}.${field.name} (${field.fieldKind})`);
}

/** A property's schema with its field's comment in front of any description of its own. */
function described(field: DescField, schema: JsonSchema): JsonSchema {
  const doc = docOf(field);
  if (doc === "") return schema;
  return { ...schema, description: schema.description === undefined ? doc : `${doc} ${schema.description}` };
}

function orNull(schema: JsonSchema): JsonSchema {
  return typeof schema.type === "string" ? { ...schema, type: [schema.type, "null"] } : { oneOf: [schema, { type: "null" }] };
}

function scalarSchema(type: ScalarType): JsonSchema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      // json.ts writes non-finite numbers as strings, as proto3 JSON does.
      return { anyOf: [{ type: "number" }, { type: "string", enum: ["NaN", "Infinity", "-Infinity"] }] };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", minimum: 0, maximum: 2 ** 32 - 1 };
    default:
      // The 64-bit integers, which json.ts writes as JSON numbers.
      return { type: "integer", format: "int64" };
  }
}

function rulesOf(field: DescField): FieldRules | undefined {
  const rules = getOption(field, fieldRules);
  return rules.ignore === Ignore.ALWAYS ? undefined : rules;
}

/** Whether a request field must be given: buf.validate refuses the request without it. */
function requiredInRequest(field: DescField): boolean {
  const rules = rulesOf(field);
  if (!rules) return false;
  if (rules.required) return true;
  if (rules.type.case === "repeated") return rules.type.value.minItems > 0n;
  // The rules of a field with presence apply only when it is set; an implicit string is checked even when empty.
  if (hasPresence(field) || rules.ignore === Ignore.IF_ZERO_VALUE) return false;
  return rules.type.case === "string" && !acceptsEmpty(rules.type.value);
}

function acceptsEmpty(r: StringRules): boolean {
  return (
    r.minLen === 0n &&
    r.prefix === "" &&
    r.wellKnown.case === undefined &&
    (r.in.length === 0 || r.in.includes("")) &&
    (r.pattern === "" || new RegExp(r.pattern, "u").test(""))
  );
}

function constraintsOf(rules: FieldRules | undefined): JsonSchema {
  switch (rules?.type.case) {
    case "string":
      return stringConstraints(rules.type.value);
    case "int32":
      return int32Constraints(rules.type.value);
    default:
      return {};
  }
}

/** A request string: its buf.validate rules, its format, and the text rule (or the name rule) of options.proto. */
function requestString(r: StringRules | undefined, rule: FieldRule): JsonSchema {
  const format = rule.format === "" ? undefined : FORMATS[rule.format];
  if (rule.format !== "" && !format) throw new Error(`OpenAPI: no format ${rule.format}`);
  const { pattern, allOf, ...s }: JsonSchema = { type: "string", ...format, ...(r ? stringConstraints(r) : {}) };
  const own = [pattern ?? "", ...(allOf ?? []).map((p) => p.pattern ?? ""), format?.pattern ?? ""].filter((p) => p !== "");
  // Every pattern must match, so one that cannot match NUL keeps NUL out.
  const closed = (r !== undefined && (r.in.length > 0 || r.wellKnown.case === "uuid")) || own.some((p) => !mayMatchNul(p));
  const text = rule.name ? [NAME_PATTERN] : closed ? [] : [TEXT_PATTERN];
  return { ...s, ...patternsOf([...new Set([...own, ...text])]) };
}

function stringConstraints(r: StringRules): JsonSchema {
  const s: JsonSchema = {};
  if (isFieldSet(r, StringRulesSchema.field.minLen)) s.minLength = Number(r.minLen);
  if (isFieldSet(r, StringRulesSchema.field.maxLen)) s.maxLength = Number(r.maxLen);
  if (r.wellKnown.case === "uuid") s.format = "uuid";
  if (r.in.length > 0) s.enum = [...r.in];
  return { ...s, ...patternsOf([r.pattern, r.prefix === "" ? "" : `^${r.prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`]) };
}

/** Patterns every one of which a string must match: one per schema, further ones in allOf. */
function patternsOf(patterns: readonly string[]): JsonSchema {
  const [first, ...rest] = patterns.filter((p) => p !== "");
  if (first === undefined) return {};
  return { pattern: first, ...(rest.length > 0 ? { allOf: rest.map((pattern) => ({ pattern })) } : {}) };
}

/**
 * Whether a pattern might match a NUL character, conservatively: only a pattern anchored at both ends (without a
 * top-level |) made of literals, escaped punctuation, \d \s \w, positive classes of those, and negated classes
 * that start by excluding NUL is known not to.
 */
export function mayMatchNul(pattern: string): boolean {
  if (!pattern.startsWith("^") || !pattern.endsWith("$") || pattern.endsWith("\\$")) return true;
  const safeEscape = /^[dswbrnt\p{P}\p{S}]$/u;
  let depth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      if (!safeEscape.test(pattern[++i] ?? "")) return true;
    } else if (c === "[") {
      const negated = pattern[i + 1] === "^";
      if (negated && !pattern.startsWith("\\x00", i + 2) && !pattern.startsWith("\\u0000", i + 2)) return true;
      for (i += negated ? 2 : 1; i < pattern.length && pattern[i] !== "]"; i++) {
        if (pattern[i] === "\\" && !safeEscape.test(pattern[++i] ?? "") && !negated) return true;
      }
    } else if (c === "(") {
      depth++;
    } else if (c === ")") {
      depth--;
    } else if (c === "." || (c === "|" && depth === 0)) {
      return true;
    }
  }
  return false;
}

/** A schema with further schemas it must also match: merged in when one, under allOf when more. */
function allOf(schema: JsonSchema, groups: readonly JsonSchema[]): JsonSchema {
  if (groups.length === 0) return schema;
  return groups.length === 1 ? { ...schema, ...groups[0] } : { ...schema, allOf: [...groups] };
}

/** A schema that holds when the field is given (present, and not the null that reads as unset). */
function given(field: DescField): JsonSchema {
  return { required: [field.jsonName], properties: { [field.jsonName]: { not: { type: "null" } } } };
}

/**
 * Message-level CEL rules that say which fields must be given, when all are body fields: has() alternatives
 * (has(this.text) || has(this.html)) as anyOf, and implications (!has(this.a) || has(this.b)) as if/then.
 */
function presenceAlternatives(desc: DescMessage, bodyFields: readonly DescField[]): JsonSchema[] {
  const groups: JsonSchema[] = [];
  const fieldsNamed = (expression: string) => [...expression.matchAll(/has\(this\.(\w+)\)/g)].map((m) => bodyFields.find((f) => f.name === m[1]));
  for (const { expression } of getOption(desc, messageRules).cel) {
    const fields = fieldsNamed(expression);
    if (fields.some((f) => f === undefined)) continue;
    if (/^has\(this\.\w+\)(\s*\|\|\s*has\(this\.\w+\))*$/.test(expression.trim())) {
      groups.push({ anyOf: fields.map((f) => given(f!)) });
    } else if (/^!has\(this\.\w+\)\s*\|\|\s*has\(this\.\w+\)$/.test(expression.trim())) {
      groups.push({ if: given(fields[0]!), then: given(fields[1]!) });
    }
  }
  return groups;
}

/** The message's oneofs among the body fields: not two members given, and one when buf.validate requires it. */
function oneofAlternatives(desc: DescMessage, bodyFields: readonly DescField[]): JsonSchema[] {
  return desc.oneofs.flatMap((oneof): JsonSchema[] => {
    const members = oneof.fields.filter((f) => bodyFields.includes(f));
    if (members.length < 2) return [];
    // oneOf holds when exactly one member is given; not(any two given) when at most one.
    if (getOption(oneof, oneofRules).required) return [{ oneOf: members.map(given) }];
    return [{ not: { anyOf: members.flatMap((f, i) => members.slice(i + 1).map((o) => allOf({}, [given(f), given(o)]))) } }];
  });
}

function int32Constraints(r: Int32Rules): JsonSchema {
  const s: JsonSchema = {};
  if (r.greaterThan.case === "gte") s.minimum = r.greaterThan.value;
  if (r.greaterThan.case === "gt") s.exclusiveMinimum = r.greaterThan.value;
  if (r.lessThan.case === "lte") s.maximum = r.lessThan.value;
  if (r.lessThan.case === "lt") s.exclusiveMaximum = r.lessThan.value;
  return s;
}

function itemCountOf(r: RepeatedRules | undefined): JsonSchema {
  if (!r) return {};
  const s: JsonSchema = {};
  if (r.minItems > 0n) s.minItems = Number(r.minItems);
  if (isFieldSet(r, RepeatedRulesSchema.field.maxItems)) s.maxItems = Number(r.maxItems);
  if (r.unique) s.uniqueItems = true;
  return s;
}
