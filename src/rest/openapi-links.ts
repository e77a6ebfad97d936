// OpenAPI links (3.1 §4.8.20): from an operation's answer to the operations that take an id it carries, e.g. from
// POST /v1/inboxes to GET /v1/inboxes/{inboxId} by the answer's id. Read from the route table and the contract's
// names: a path parameter names a resource (inboxId: Inbox), and an answer carries its id as the `id` of a message
// of that resource (Inbox, GetThreadResponse and ThreadSummary for Thread, WebhookEndpoint for Webhook), as a field
// of the parameter's name (a message's threadId), at the top or in the first item of a list. Only from fields that
// are never null: a link from a nullable id (an inbox's domainId, null for a managed address) would send clients,
// and fuzzers that follow links, to /v1/domains/null.
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { hasPresence } from "./json.js";
import type { Route } from "./routes.js";

export interface Link {
  readonly operationId: string;
  readonly parameters: Record<string, string>;
  readonly description: string;
}

/** The links of each route's success answer, by route; routes without links are absent. */
export function linksOf(
  routes: readonly Route[],
  operationIdOf: (route: Route) => string,
  pathOf: (route: Route) => string,
): Map<Route, Record<string, Link>> {
  const params = new Set(routes.flatMap((r) => r.pathFields.map((f) => f.jsonName)));
  const targets = routes.filter((r) => !r.stream && r.pathFields.length > 0);
  const links = new Map<Route, Record<string, Link>>();
  for (const route of routes) {
    const answered = answeredMessage(route);
    if (!answered) continue;
    const sources = idSources(answered, params);
    const found: Record<string, Link> = {};
    for (const target of targets) {
      if (target === route || !target.pathFields.every((f) => sources.has(f.jsonName))) continue;
      const parameters = Object.fromEntries(target.pathFields.map((f) => [`path.${f.jsonName}`, `$response.body#${sources.get(f.jsonName)!.pointer}`]));
      const from = target.pathFields.map((f) => `${f.jsonName} from ${sources.get(f.jsonName)!.says}`).join(", ");
      found[operationIdOf(target)] = { operationId: operationIdOf(target), parameters, description: `${target.verb} ${pathOf(target)} with ${from}.` };
    }
    if (Object.keys(found).length > 0) links.set(route, found);
  }
  return links;
}

/** The JSON object a route answers with, if any: its response field's message, or its response. */
function answeredMessage(route: Route): DescMessage | undefined {
  if (route.stream || route.successStatus === 204) return undefined;
  const field = route.responseField;
  if (field === undefined) return route.method.output;
  return field.fieldKind === "message" ? field.message : undefined;
}

interface Source {
  /** JSON pointer into the answer. */
  readonly pointer: string;
  /** Where it is, in words. */
  readonly says: string;
}

/** Where an answer of `message` carries each resource's id: its own id, a field of that name, or a list's first item. */
function idSources(message: DescMessage, params: ReadonlySet<string>): Map<string, Source> {
  const sources = new Map<string, Source>();
  const add = (param: string, pointer: string, says: string) => {
    if (!sources.has(param)) sources.set(param, { pointer, says });
  };
  const carried = (of: DescMessage, prefix: string, says: string) => {
    const resource = of.name.replace(/^(Get|Create)(?=[A-Z])/, "");
    for (const param of params) {
      if (idField(of, "id") && resource.startsWith(param.replace(/Id$/, "").replace(/^./, (c) => c.toUpperCase()))) add(param, `${prefix}/id`, `${says}id`);
      if (idField(of, param)) add(param, `${prefix}/${param}`, `${says}${param}`);
    }
  };
  carried(message, "", "the answer's ");
  for (const list of message.fields) {
    if (list.fieldKind === "list" && list.listKind === "message") carried(list.message, `/${list.jsonName}/0`, `the first of ${list.jsonName}: its `);
  }
  return sources;
}

/** A string field of that JSON name that is never null (no presence: unset is "", never null). */
function idField(message: DescMessage, jsonName: string): DescField | undefined {
  const field = message.fields.find((f) => f.jsonName === jsonName);
  return field?.fieldKind === "scalar" && field.scalar === ScalarType.STRING && !hasPresence(field) ? field : undefined;
}
