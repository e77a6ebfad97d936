import { describe, expect, test } from "vitest";
import { buildRouteTable, matchRoute } from "../../src/rest/routes.js";
import { CONTRACT_SERVICES } from "../../src/rpc/services.js";

const routes = buildRouteTable(CONTRACT_SERVICES);

describe("the /v1 route table read from the contract", () => {
  test("has every endpoint of the spec with its scope, status and bindings", () => {
    const table = routes.map((r) =>
      [
        r.verb.padEnd(6),
        r.template.padEnd(55),
        `${r.method.parent.name}.${r.method.name}`.padEnd(40),
        (r.scope || "(any key)").padEnd(16),
        String(r.successStatus),
        r.body ? `body=${r.body}${r.rawBodyField ? "(raw)" : ""}` : "",
        r.headerFields.map((h) => `header=${h.header}`).join(" "),
        r.queryFields.length ? `query=${r.queryFields.map((f) => f.jsonName).join(",")}` : "",
        r.unimplemented ? "501" : "",
        r.stream ? `stream=sse${r.stream.eventIdField ? ` id=${r.stream.eventIdField.jsonName}` : ""}` : "",
      ]
        .join(" ")
        .trimEnd(),
    );
    expect(table.join("\n")).toMatchSnapshot();
  });

  test("gives every RPC a route and a declared rule", () => {
    const methods = CONTRACT_SERVICES.flatMap((s) => s.methods);
    expect(routes).toHaveLength(methods.length);
    expect(routes.length).toBe(42);
  });

  test("matches concrete paths, and tells the allowed verbs of a path under the wrong verb", () => {
    const found = matchRoute(routes, "GET", "/v1/inboxes/inb_0123456789abcdef01234567/export");
    expect("match" in found && found.match.route.method.name).toBe("ExportInbox");
    expect("match" in found && found.match.params).toEqual({ inbox_id: "inb_0123456789abcdef01234567" });
    expect(matchRoute(routes, "PATCH", "/v1/inboxes")).toEqual({ allowed: ["POST", "GET"] });
    expect(matchRoute(routes, "GET", "/v1/inboxes/a/b/c")).toEqual({ allowed: [] });
  });

  test("splits a custom verb off the last segment of a path, so a path variable never takes it in", () => {
    const inbox = "inb_0123456789abcdef01234567";
    const wait = matchRoute(routes, "GET", `/v1/inboxes/${inbox}/messages:wait`);
    expect("match" in wait && [wait.match.route.method.name, wait.match.params]).toEqual(["WaitForMessage", { inbox_id: inbox }]);
    expect(matchRoute(routes, "POST", `/v1/inboxes/${inbox}/messages:wait`)).toEqual({ allowed: ["GET"] });
    const stream = matchRoute(routes, "GET", "/v1/events:stream");
    expect("match" in stream && stream.match.route.method.name).toBe("StreamEvents");
    // Not GetInbox of an inbox named "inb_…:wait", nor SendMessage or WaitForMessage under another verb.
    expect(matchRoute(routes, "GET", `/v1/inboxes/${inbox}:wait`)).toEqual({ allowed: [] });
    expect(matchRoute(routes, "GET", `/v1/inboxes/${inbox}/messages:stream`)).toEqual({ allowed: [] });
    expect(matchRoute(routes, "GET", `/v1/inboxes/${inbox}/messages`)).toEqual({ allowed: ["POST"] });
    expect(matchRoute(routes, "GET", "/v1/events")).toEqual({ allowed: [] });
  });
});
