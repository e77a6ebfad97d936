// The JSON codec of the /v1 face. It differs from canonical proto3 JSON where the spec does:
// fields with presence are written as null when unset (unless the contract says omit), timestamps always carry
// exactly three fractional digits, request bodies may not name fields that travel in the path or a header, and
// null is read as "not given" only for a field with presence (proto3 JSON would read it as "" or 0 anywhere).
import {
  create,
  fromJson,
  getOption,
  ScalarType,
  toJson,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type Message,
} from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence, timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import { field as fieldRule } from "../../gen/mailbox/v1/options_pb.js";
import { textProblem } from "../text-rule.js";
import type { Route } from "./routes.js";

/** A request the JSON face could not turn into a request message: always a 400. */
export class RestInputError extends Error {}

interface FieldPlan {
  readonly field: DescField;
  readonly nullable: boolean;
  readonly presentWith: DescField | undefined;
}

const plans = new WeakMap<DescMessage, readonly FieldPlan[]>();

function planOf(desc: DescMessage): readonly FieldPlan[] {
  let plan = plans.get(desc);
  if (!plan) {
    plan = desc.fields.map((field) => {
      const rule = getOption(field, fieldRule);
      return {
        field,
        nullable: hasPresence(field) && !rule.omitWhenUnset,
        presentWith: rule.presentWith === "" ? undefined : desc.fields.find((f) => f.name === rule.presentWith),
      };
    });
    plans.set(desc, plan);
  }
  return plan;
}

/** Whether a field can be unset, which JSON writes as null (or omits) and reads from null. */
export function hasPresence(field: DescField): boolean {
  return field.fieldKind !== "list" && field.fieldKind !== "map" && field.presence !== FeatureSet_FieldPresence.IMPLICIT;
}

// protobuf-es holds Struct and Value fields as plain JSON already; these other well-known types have a canonical
// JSON form that is also ours.
const ALREADY_JSON = new Set(["google.protobuf.Struct", "google.protobuf.Value"]);
const WKT_AS_PROTO_JSON = new Set(["google.protobuf.ListValue", "google.protobuf.Duration"]);

export function writeMessage(desc: DescMessage, message: Message): JsonObject {
  const out: JsonObject = {};
  const fields = message as unknown as Record<string, unknown>;
  for (const { field, nullable, presentWith } of planOf(desc)) {
    if (presentWith && fields[presentWith.localName] === undefined) continue;
    const value = fields[field.localName];
    if (value === undefined) {
      if (nullable) out[field.jsonName] = null;
      continue;
    }
    out[field.jsonName] = writeField(field, value);
  }
  return out;
}

function writeField(field: DescField, value: unknown): JsonValue {
  switch (field.fieldKind) {
    case "scalar":
      return writeScalar(field.scalar, value);
    case "enum":
      return field.enum.value[value as number]?.name ?? (value as number);
    case "message":
      return writeNested(field.message, value as Message);
    case "list":
      return (value as unknown[]).map((item) =>
        field.listKind === "message"
          ? writeNested(field.message, item as Message)
          : field.listKind === "enum"
            ? (field.enum.value[item as number]?.name ?? (item as number))
            : writeScalar(field.scalar, item),
      );
    case "map": {
      const out: JsonObject = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        out[k] = field.mapKind === "message" ? writeNested(field.message, v as Message) : writeScalar(field.scalar as ScalarType, v);
      }
      return out;
    }
  }
}

function writeNested(desc: DescMessage, message: Message): JsonValue {
  if (desc.typeName === "google.protobuf.Timestamp") return timestampDate(message as Timestamp).toISOString();
  if (ALREADY_JSON.has(desc.typeName)) return message as unknown as JsonValue;
  if (WKT_AS_PROTO_JSON.has(desc.typeName)) return toJson(desc, message);
  return writeMessage(desc, message);
}

function writeScalar(type: ScalarType, value: unknown): JsonValue {
  switch (type) {
    case ScalarType.BYTES:
      return Buffer.from(value as Uint8Array).toString("base64");
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return Number(value);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return Number.isFinite(value as number) ? (value as number) : String(value);
    default:
      return value as JsonValue;
  }
}

export interface RestRequestParts {
  params: Record<string, string>;
  query: URLSearchParams;
  headers: (name: string) => string | undefined;
  /** The parsed JSON body, or undefined when the request had none. */
  body: JsonValue | undefined;
  /** For a route whose body is a google.api.HttpBody (Route.rawBodyField): the body's bytes and Content-Type. */
  rawBody?: { readonly contentType: string; readonly data: Uint8Array };
}

/** Builds the request message of a route from path, query, headers and body, refusing anything unknown. */
export function readRequest<T extends Message>(route: Route, parts: RestRequestParts): T {
  const json: JsonObject = {};
  if (route.body === "*") {
    const body = parts.body ?? {};
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new RestInputError("the request body must be a JSON object");
    }
    for (const key of Object.keys(body)) {
      if (!route.bodyFields.some((f) => f.jsonName === key || f.name === key)) {
        throw new RestInputError(`unknown property "${key}" in the request body`);
      }
    }
    Object.assign(json, body);
  } else if (route.body !== undefined) {
    if (parts.body !== undefined) json[route.bodyFields[0]!.jsonName] = parts.body;
  } else if (parts.body !== undefined) {
    throw new RestInputError("this operation takes no request body");
  }
  for (const key of new Set(parts.query.keys())) {
    const field = route.queryFields.find((f) => f.jsonName === key || f.name === key);
    if (!field) throw new RestInputError(`unknown query parameter "${key}"`);
    const values = parts.query.getAll(key).map((v) => queryValue(field, v));
    json[field.jsonName] = field.fieldKind === "list" ? values : values[values.length - 1]!;
  }
  for (const field of route.pathFields) json[field.jsonName] = parts.params[field.name]!;
  for (const { header, field } of route.headerFields) {
    const value = parts.headers(header);
    if (value !== undefined) json[field.jsonName] = value;
  }
  const message = readMessage<T>(route.method.input, json);
  // Bound after reading: the bytes never pass through JSON (and base64) on their way in.
  if (route.rawBodyField && parts.rawBody) {
    (message as unknown as Record<string, unknown>)[route.rawBodyField.localName] = create(HttpBodySchema, parts.rawBody);
  }
  return message;
}

/** Reads a request message from one JSON object of all its fields (the MCP tools' arguments), refusing anything unknown. */
export function readMessage<T extends Message>(desc: DescMessage, json: JsonObject): T {
  checkJson(desc, json, "");
  try {
    return fromJson(desc, json, { ignoreUnknownFields: false }) as T;
  } catch (e) {
    throw new RestInputError(describeJsonError(e));
  }
}

/**
 * Refuses, naming the JSON path, what the proto3 JSON reader would misread or name by its proto field only: null
 * for a field without presence, and a string that is not text the contract accepts (the reader refuses an unpaired
 * surrogate as "invalid UTF8" of a field name). The validation interceptor applies the same text rule on every
 * face, free-form JSON (Struct, Value) included.
 */
function checkJson(desc: DescMessage, json: JsonObject, path: string): void {
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.jsonName === key || f.name === key);
    if (!field) continue; // the reader refuses it by name
    const at = path === "" ? field.jsonName : `${path}.${field.jsonName}`;
    if (value === null) {
      if (!hasPresence(field)) throw new RestInputError(`${at}: must not be null`);
    } else if (field.fieldKind === "list" && Array.isArray(value)) {
      value.forEach((item, i) => {
        if (item === null) throw new RestInputError(`${at}[${i}]: must not be null`);
        checkValue(field, item, `${at}[${i}]`);
      });
    } else {
      checkValue(field, value, at);
    }
  }
}

function checkValue(field: DescField, value: JsonValue, at: string): void {
  if (typeof value === "string") {
    const problem = textProblem(value);
    if (problem !== undefined) throw new RestInputError(`${at}: ${problem}`);
  } else if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const desc = field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message") ? field.message : undefined;
    if (desc && !desc.typeName.startsWith("google.protobuf.")) checkJson(desc, value, at);
  }
}

// Query strings carry text; proto3 JSON accepts numbers as strings but not booleans.
function queryValue(field: DescField, raw: string): JsonValue {
  const scalar = field.fieldKind === "scalar" || (field.fieldKind === "list" && field.listKind === "scalar") ? field.scalar : undefined;
  if (scalar === ScalarType.BOOL) {
    if (raw === "true" || raw === "false") return raw === "true";
    throw new RestInputError(`query parameter "${field.jsonName}" must be true or false`);
  }
  return raw;
}

function describeJsonError(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  // "cannot decode field mailbox.v1.CreateInboxRequest.local_part from JSON: 5" → name the JSON property only.
  const m = /cannot decode (?:field )?[\w.]*?\.(\w+) from JSON: (.*)$/s.exec(text);
  return m ? `invalid value for "${m[1]}": ${m[2]}` : text.replace(/mailbox\.v1\./g, "");
}
