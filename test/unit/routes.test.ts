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
        (r.scope || "(any key)").padEnd(15),
        String(r.successStatus),
        r.body ? `body=${r.body}` : "",
        r.headerFields.map((h) => `header=${h.header}`).join(" "),
        r.queryFields.length ? `query=${r.queryFields.map((f) => f.jsonName).join(",")}` : "",
        r.unimplemented ? "501" : "",
      ]
        .join(" ")
        .trimEnd(),
    );
    expect(table.join("\n")).toMatchSnapshot();
  });

  test("gives every RPC a route and a declared rule", () => {
    const methods = CONTRACT_SERVICES.flatMap((s) => s.methods);
    expect(routes).toHaveLength(methods.length);
    expect(routes.length).toBe(28);
  });

  test("matches concrete paths, and tells the allowed verbs of a path under the wrong verb", () => {
    const found = matchRoute(routes, "GET", "/v1/inboxes/inb_0123456789abcdef01234567/export");
    expect("match" in found && found.match.route.method.name).toBe("ExportInbox");
    expect("match" in found && found.match.params).toEqual({ inbox_id: "inb_0123456789abcdef01234567" });
    expect(matchRoute(routes, "PATCH", "/v1/inboxes")).toEqual({ allowed: ["POST", "GET"] });
    expect(matchRoute(routes, "GET", "/v1/inboxes/a/b/c")).toEqual({ allowed: [] });
  });
});
