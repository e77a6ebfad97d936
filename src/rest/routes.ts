// The /v1 route table, read from the google.api.http annotations of the registered services at start-up.
// Adding an annotated RPC adds its route: there is no hand-written route per endpoint. A template may end in a
// custom verb (/v1/inboxes/{inbox_id}/messages:wait): as in google.api.http, a colon in the last segment of a path
// starts its verb, so a path variable never takes it in. As in grpc-gateway, a body bound to one field leaves the
// other fields to the query string, and a body field of type google.api.HttpBody takes the raw request body.
import { getOption, type DescField, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import { field as fieldRule, method as methodRule } from "../../gen/mailbox/v1/options_pb.js";

export type HttpVerb = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface Route {
  readonly method: DescMethod;
  readonly verb: HttpVerb;
  /** The path template as annotated, e.g. /v1/inboxes/{inbox_id}, custom verb included (…/messages:wait). */
  readonly template: string;
  /** Matches a request path without its custom verb; named groups are the path fields' proto names. */
  readonly pattern: RegExp;
  /** The template's custom verb (wait of …/messages:wait), which a request's path must end in; undefined for none. */
  readonly customVerb: string | undefined;
  readonly pathFields: readonly DescField[];
  /** Request fields bound to HTTP headers (e.g. idempotency-key). */
  readonly headerFields: readonly { header: string; field: DescField }[];
  /** Request fields read from the JSON body: all of "*" minus path and header fields, or the one named field. */
  readonly bodyFields: readonly DescField[];
  /** "*" (the body is the request), a field name (the body is that field), or undefined (no body). */
  readonly body: string | undefined;
  /**
   * The body field when it is a google.api.HttpBody: it takes the raw request body (data) and its Content-Type
   * (content_type), whatever they are, instead of JSON.
   */
  readonly rawBodyField: DescField | undefined;
  /** Request fields read from the query string: those not bound to the path, a header or the body. */
  readonly queryFields: readonly DescField[];
  /** The response field written as the body, or undefined for the whole response. */
  readonly responseField: DescField | undefined;
  /** For a raw-bytes body: the response field holding its download filename (Content-Disposition). */
  readonly downloadFilenameField: DescField | undefined;
  readonly scope: string;
  readonly successStatus: number;
  readonly replayStatusField: DescField | undefined;
  readonly unimplemented: boolean;
  /**
   * For a server-streaming RPC, served on the JSON face as Server-Sent Events: the field of each streamed message (of
   * the response field, when the route answers with one) that is its event id (FieldRule.stream_event_id).
   */
  readonly stream: { readonly eventIdField: DescField | undefined } | undefined;
}

const VARIABLE = /\{([a-z_][a-z0-9_]*)\}/g;

/** The message that carries a raw HTTP body (google/api/httpbody.proto). */
export const HTTP_BODY = "google.api.HttpBody";

export function buildRouteTable(services: readonly DescService[]): Route[] {
  const routes: Route[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      const route = routeOf(method);
      if (route) routes.push(route);
    }
  }
  assertNoAmbiguity(routes);
  return routes;
}

/** The scope and statuses of a method, which every RPC must declare (the auth layer refuses methods without it). */
export function methodRuleOf(method: DescMethod) {
  return getOption(method, methodRule);
}

function routeOf(method: DescMethod): Route | undefined {
  const rule = getOption(method, http);
  if (rule.pattern.case === undefined || rule.pattern.case === "custom") return undefined;
  if (method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming") {
    throw new Error(`${method.parent.typeName}.${method.name}: the JSON face serves unary and server-streaming RPCs only`);
  }
  const verb = rule.pattern.case.toUpperCase() as HttpVerb;
  const template = rule.pattern.value;
  const [path, customVerb] = splitCustomVerb(template);
  const input = method.input;

  const pathFields: DescField[] = [];
  const source = path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(VARIABLE, (_, name: string) => {
    pathFields.push(requireField(method, input.fields, name));
    return `(?<${name}>[^/]+)`;
  });
  const headerFields = input.fields
    .map((f) => ({ header: getOption(f, fieldRule).header, field: f }))
    .filter((h) => h.header !== "");
  const bound = new Set<DescField>([...pathFields, ...headerFields.map((h) => h.field)]);
  const unbound = input.fields.filter((f) => !bound.has(f));
  const body = rule.body === "" ? undefined : rule.body;
  const bodyFields =
    body === undefined ? [] : body === "*" ? unbound : [requireField(method, input.fields, body)];
  const queryFields = body === "*" ? [] : unbound.filter((f) => !bodyFields.includes(f));
  const rawBodyField = body !== "*" && bodyFields[0]?.message?.typeName === HTTP_BODY ? bodyFields[0] : undefined;
  const responseField =
    rule.responseBody === "" ? undefined : requireField(method, method.output.fields, rule.responseBody);
  const m = methodRuleOf(method);
  const replayStatusField =
    m.replayStatusField === "" ? undefined : requireField(method, method.output.fields, m.replayStatusField);
  const streamed = responseField?.fieldKind === "message" ? responseField.message : method.output;

  return {
    method,
    verb,
    template,
    pattern: new RegExp(`^${source}$`),
    customVerb,
    pathFields,
    headerFields,
    bodyFields,
    body,
    rawBodyField,
    queryFields,
    responseField,
    downloadFilenameField: method.output.fields.find((f) => getOption(f, fieldRule).downloadFilename),
    scope: m.scope,
    successStatus: m.successStatus === 0 ? 200 : m.successStatus,
    replayStatusField,
    unimplemented: m.unimplemented,
    stream:
      method.methodKind === "server_streaming"
        ? { eventIdField: streamed.fields.find((f) => getOption(f, fieldRule).streamEventId) }
        : undefined,
  };
}

/** A path and its custom verb: the text after a colon in its last segment (/v1/a/b:wait → /v1/a/b, wait). */
function splitCustomVerb(path: string): [string, string | undefined] {
  const colon = path.indexOf(":", path.lastIndexOf("/"));
  return colon === -1 ? [path, undefined] : [path.slice(0, colon), path.slice(colon + 1)];
}

function requireField(method: DescMethod, fields: readonly DescField[], name: string): DescField {
  const found = fields.find((f) => f.name === name);
  if (!found) throw new Error(`${method.parent.typeName}.${method.name}: http rule names unknown field ${name}`);
  return found;
}

// Two routes with the same verb whose templates could match the same path would make dispatch order-dependent.
function assertNoAmbiguity(routes: readonly Route[]): void {
  const seen = new Map<string, Route>();
  for (const r of routes) {
    const shape = `${r.verb} ${r.template.replace(VARIABLE, "{}")}`;
    const other = seen.get(shape);
    if (other) throw new Error(`ambiguous routes: ${other.method.name} and ${r.method.name} (${shape})`);
    seen.set(shape, r);
  }
}

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

/** Finds the route of a request; `allowed` lists the verbs of a path that exists under another verb (405). */
export function matchRoute(
  routes: readonly Route[],
  verb: string,
  path: string,
): { match: RouteMatch } | { allowed: HttpVerb[] } {
  const allowed: HttpVerb[] = [];
  const [bare, customVerb] = splitCustomVerb(path);
  for (const route of routes) {
    if (route.customVerb !== customVerb) continue;
    const m = route.pattern.exec(bare);
    if (!m) continue;
    if (route.verb !== verb) {
      allowed.push(route.verb);
      continue;
    }
    const params: Record<string, string> = {};
    for (const [k, v] of Object.entries(m.groups ?? {})) params[k] = decodeURIComponent(v);
    return { match: { route, params } };
  }
  return { allowed };
}
