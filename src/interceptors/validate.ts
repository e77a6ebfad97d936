// Validates every request message against the contract: the rules of options.proto that buf.validate cannot state
// (every string is text, names are names, free-form JSON objects keep their bounds), walked over every field, list
// item, map and JSON object of the message, then the buf.validate rules. Each problem names the field as the JSON
// face spells it: to[1].name, metadata.order. A valid call of an RPC not served yet (MethodRule.unimplemented), or a
// valid request that uses a part of the contract not served yet (FieldRule.unimplemented, unimplemented_values), is
// then answered 501 not_implemented: an invalid one is 400 as it will be once served.
import { getOption, isFieldSet, ScalarType, type DescField, type DescMessage, type DescMethod, type JsonValue, type Message } from "@bufbuild/protobuf";
import { createValidator } from "@bufbuild/protovalidate";
import type { Path } from "@bufbuild/protobuf/reflect";
import type { Interceptor } from "@connectrpc/connect";
import { field as fieldOption, method as methodOption, type FieldRule, type JsonObjectRule } from "../../gen/mailbox/v1/options_pb.js";
import { InvalidRequest, NotImplemented } from "../errors.js";
import { nameProblem, textProblem } from "../text-rule.js";

export function validateRequests(): Interceptor {
  const validator = createValidator();
  const validate = (desc: DescMessage, message: Message) => {
    const problems = contractProblems(desc, message);
    const result = validator.validate(desc, message);
    if (result.kind === "error") throw result.error;
    if (result.kind === "invalid") problems.push(...result.violations.map((v) => `${jsonPath(v.field)}: ${v.message}`));
    if (problems.length > 0) throw new InvalidRequest(problems.join("; "));
  };
  return (next) => async (req) => {
    if (!req.stream) {
      validate(req.method.input, req.message);
      if (isUnserved(req.method)) throw new NotImplemented(`${req.method.name} is not implemented yet`);
      const unserved = unimplementedParts(req.method.input, req.message);
      if (unserved.length > 0) throw new NotImplemented(`not implemented yet: ${unserved.join("; ")}`);
      return next(req);
    }
    // A stream's request messages are checked as the implementation reads them (a server stream's one before it starts).
    return next({ ...req, message: validated(req.message, (m) => validate(req.method.input, m)) });
  };
}

async function* validated<T extends Message>(messages: AsyncIterable<T>, validate: (message: T) => void): AsyncIterable<T> {
  for await (const message of messages) {
    validate(message);
    yield message;
  }
}

const unservedMethods = new WeakMap<DescMethod, boolean>();

function isUnserved(method: DescMethod): boolean {
  let unserved = unservedMethods.get(method);
  if (unserved === undefined) unservedMethods.set(method, (unserved = getOption(method, methodOption).unimplemented));
  return unserved;
}

/** A field not served yet (values undefined), or the values of a field that are not. */
interface Unserved {
  readonly field: DescField;
  readonly values: readonly string[] | undefined;
}

const unimplementedFields = new WeakMap<DescMessage, readonly Unserved[]>();

/**
 * The fields of a request message that are not served yet and that the request sets (isFieldSet: a list with items,
 * true, any value of a field with presence), or the values of a field that are not: "cc", "events: submission.held".
 */
export function unimplementedParts(desc: DescMessage, message: Message): string[] {
  let fields = unimplementedFields.get(desc);
  if (!fields) {
    fields = desc.fields.flatMap((field): Unserved[] => {
      const rule = ruleOf(field);
      if (rule.unimplemented) return [{ field, values: undefined }];
      return rule.unimplementedValues.length > 0 ? [{ field, values: rule.unimplementedValues }] : [];
    });
    unimplementedFields.set(desc, fields);
  }
  const parts: string[] = [];
  const values = message as unknown as Record<string, unknown>;
  for (const { field, values: unserved } of fields) {
    const value = values[field.localName];
    if (unserved) {
      const given = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === "string" && unserved.includes(v));
      if (given.length > 0) parts.push(`${field.jsonName}: ${[...new Set(given)].join(", ")}`);
    } else if (isFieldSet(message, field)) {
      parts.push(field.jsonName);
    }
  }
  return parts;
}

/** The breaches of options.proto's rules in a request message, each as "path: problem". */
export function contractProblems(desc: DescMessage, message: Message): string[] {
  const problems: string[] = [];
  walkMessage(desc, message, "", problems);
  return problems;
}

function walkMessage(desc: DescMessage, message: Message, path: string, out: string[]): void {
  const fields = message as unknown as Record<string, unknown>;
  for (const member of desc.members) {
    if (member.kind === "oneof") {
      const selected = fields[member.localName] as { case: string | undefined; value?: unknown };
      const field = member.fields.find((f) => f.localName === selected.case);
      if (field) walkField(field, selected.value, path, out);
    } else {
      walkField(member, fields[member.localName], path, out);
    }
  }
}

function walkField(field: DescField, value: unknown, parent: string, out: string[]): void {
  if (value === undefined) return;
  const path = parent === "" ? field.jsonName : `${parent}.${field.jsonName}`;
  const rule = ruleOf(field);
  const text = (s: unknown, at: string) => report((rule.name ? nameProblem : textProblem)(s as string), at, out);
  switch (field.fieldKind) {
    case "scalar":
      if (field.scalar === ScalarType.STRING) text(value, path);
      return;
    case "message":
      return walkNested(field.message, value, path, rule, out);
    case "list":
      (value as unknown[]).forEach((item, i) => {
        const at = `${path}[${i}]`;
        if (field.listKind === "message") walkNested(field.message, item, at, rule, out);
        else if (field.listKind === "scalar" && field.scalar === ScalarType.STRING) text(item, at);
      });
      return;
    case "map":
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        report(textProblem(key), `${path} key ${JSON.stringify(key)}`, out);
        const at = keyPath(path, key);
        if (field.mapKind === "message") walkNested(field.message, item, at, rule, out);
        else if (field.mapKind === "scalar" && field.scalar === ScalarType.STRING) text(item, at);
      }
      return;
  }
}

function walkNested(desc: DescMessage, value: unknown, path: string, rule: FieldRule, out: string[]): void {
  switch (desc.typeName) {
    // protobuf-es holds these as plain JSON.
    case "google.protobuf.Struct":
      walkJson(value as JsonValue, path, out);
      if (rule.jsonObject) checkJsonObject(value as Record<string, JsonValue>, rule.jsonObject, path, out);
      return;
    case "google.protobuf.Value":
      return walkJson(value as JsonValue, path, out);
    case "google.protobuf.StringValue":
      return report(textProblem(value as string), path, out);
    default:
      return walkMessage(desc, value as Message, path, out);
  }
}

function walkJson(value: JsonValue, path: string, out: string[]): void {
  if (typeof value === "string") {
    report(textProblem(value), path, out);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => walkJson(item, `${path}[${i}]`, out));
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      report(textProblem(key), `${path} key ${JSON.stringify(key)}`, out);
      walkJson(item, keyPath(path, key), out);
    }
  }
}

const keyPatterns = new Map<string, RegExp>();

function checkJsonObject(object: Record<string, JsonValue>, rule: JsonObjectRule, path: string, out: string[]): void {
  const keys = Object.keys(object);
  if (rule.maxKeys > 0 && keys.length > rule.maxKeys) out.push(`${path}: at most ${rule.maxKeys} keys`);
  if (rule.keyPattern !== "") {
    let pattern = keyPatterns.get(rule.keyPattern);
    if (!pattern) keyPatterns.set(rule.keyPattern, (pattern = new RegExp(rule.keyPattern, "u")));
    const bad = keys.find((key) => !pattern.test(key));
    if (bad !== undefined) out.push(`${path}: key ${JSON.stringify(bad)} does not match ${rule.keyPattern}`);
  }
  if (rule.maxJsonBytes > 0 && Buffer.byteLength(JSON.stringify(object)) > rule.maxJsonBytes) {
    out.push(`${path}: at most ${rule.maxJsonBytes} bytes as JSON`);
  }
}

function report(problem: string | undefined, path: string, out: string[]): void {
  if (problem !== undefined) out.push(`${path}: ${problem}`);
}

const rules = new WeakMap<DescField, FieldRule>();

function ruleOf(field: DescField): FieldRule {
  let rule = rules.get(field);
  if (!rule) rules.set(field, (rule = getOption(field, fieldOption)));
  return rule;
}

/** A map or JSON object entry as the JSON face names it: metadata.order, or metadata["two words"]. */
function keyPath(path: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

// Names the field as the JSON face spells it: to[1].email.
function jsonPath(path: Path): string {
  let out = "";
  for (const item of path) {
    if (item.kind === "field") out += (out === "" ? "" : ".") + item.jsonName;
    else if (item.kind === "list_sub") out += `[${item.index}]`;
    else if (item.kind === "map_sub") out = keyPath(out, String(item.key));
  }
  return out === "" ? "request" : out;
}
