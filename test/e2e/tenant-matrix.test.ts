// The cross-tenant matrix, generated from the route table: every /v1 route that takes an id is called with the ids
// of one organization's resources by another organization's key and by an inbox-restricted key of the same
// organization. Each answers 404 (or 403 inbox_restricted where the README says so) and the owner's rows are
// exactly as they were. A new id-taking route fails this test until it has a resource (and a body) here, and the
// owner's own key is shown to reach every route, so no 404 here can come from ids that name nothing.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { buildRouteTable, type Route } from "../../src/rest/routes.js";
import { CONTRACT_SERVICES } from "../../src/rpc/services.js";
import { storeInbound } from "../support/mail-fixtures.js";
import { startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

const WEBHOOK_HOST = "127.0.44.250";

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WEBHOOK_ALLOW_HOSTS: WEBHOOK_HOST });
});
afterAll(() => app?.stop());

/** One resource of every kind a route can name, all belonging to one organization. */
interface OwnedResources {
  readonly ids: Readonly<Record<string, string>>;
  /** Another inbox of the owner: the one an inbox-restricted key may use. */
  readonly otherInboxId: string;
}

async function ownedResources(owner: Tenant): Promise<OwnedResources> {
  const inbox = async () =>
    (await owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("matrix"), displayName: "Matrix" } })).body.id as string;
  const inboxId = await inbox();
  const otherInboxId = await inbox();
  const inbound = await storeInbound(app.db, {
    organizationId: owner.organizationId,
    inboxId,
    attachments: [{ filename: "report.txt", content: "quarterly numbers", scanState: "clean" }],
  });
  // Sent by an agent's key whose sends are held, so the owner's key can decide it (the sending key never may).
  const agent = await owner.issueKey({ scopes: ["mailbox:send"], holdFor: "all" });
  const sent = await owner.request("POST", `/v1/inboxes/${inboxId}/messages`, {
    body: { to: [{ email: "someone@example.com" }], subject: "Matrix", text: "hello" },
    headers: { "x-api-key": agent.key, "idempotency-key": uniqueName("matrix-send") },
  });
  expect(sent.status).toBe(202);
  expect(sent.body.submission.status).toBe("held");
  const domain = await owner.request("POST", "/v1/domains", { body: { domain: `${uniqueName("matrix")}.example.com` } });
  expect(domain.status).toBe(201);
  const webhook = await owner.request("POST", "/v1/webhooks", {
    body: { url: `https://${WEBHOOK_HOST}/${uniqueName("hook")}`, events: ["message.received"] },
    headers: { "idempotency-key": uniqueName("matrix-hook") },
  });
  expect(webhook.status).toBe(201);
  const upload = await owner.request("POST", "/v1/uploads?filename=matrix.txt", { body: "matrix upload", headers: { "content-type": "text/plain" } });
  expect(upload.status).toBe(201);
  // Rules of the inbox's own, so that removing them changes a row.
  const rules = await owner.request("PUT", `/v1/inboxes/${inboxId}/sender-rules`, { body: { block: ["spam.example"] } });
  expect(rules.status).toBe(200);
  return {
    ids: {
      inbox_id: inboxId,
      thread_id: inbound.threadId,
      message_id: inbound.messageId,
      attachment_id: inbound.attachmentIds[0]!,
      submission_id: sent.body.submission.id,
      domain_id: domain.body.id,
      webhook_id: webhook.body.id,
      upload_id: upload.body.id,
    },
    otherInboxId,
  };
}

/** A body that passes validation for each route that takes one, so the answer is about the ids alone. */
function bodyOf(route: Route, ids: OwnedResources["ids"]): unknown {
  if (route.body === undefined) return undefined;
  const bodies: Record<string, unknown> = {
    SendMessage: { to: [{ email: "someone@example.com" }], subject: "intrusion", text: "hello" },
    ReplyToThread: { targetMessageId: ids.message_id, text: "a reply" },
    ForwardMessage: { to: [{ email: "someone@example.com" }], text: "see below" },
    ApproveSubmission: {},
    RejectSubmission: {},
    UpdateInboxSenderRules: { allow: ["partner.example"], block: [], requireAuthenticated: true },
  };
  const body = bodies[route.method.name];
  if (body === undefined) throw new Error(`no body for ${route.method.name}: add one to the matrix`);
  return body;
}

/**
 * The organization's row and every row of it in every table that has an organization_id column, as a count and a
 * digest per table: any insert, update or delete on the owner's data changes it.
 */
async function ownerRows(organizationId: string): Promise<Record<string, string>> {
  const tables = await app.db.sql.query<{ table_name: string }>(
    `select table_name from information_schema.columns
      where table_schema = current_schema() and column_name = 'organization_id' order by table_name`,
    [],
  );
  const digest: Record<string, string> = {};
  for (const [table, column] of [["organizations", "id"], ...tables.map((t) => [t.table_name, "organization_id"])] as const) {
    const [row] = await app.db.sql.query<{ digest: string | null; n: number }>(
      `select md5(string_agg(t::text, '|' order by t::text)) as digest, count(*)::int as n
         from "${table}" t where "${column}" = $1`,
      [organizationId],
    );
    digest[table] = `${row!.n}:${row!.digest ?? ""}`;
  }
  return digest;
}

const routes = buildRouteTable(CONTRACT_SERVICES);
const idRoutes = routes.filter((r) => r.pathFields.length > 0);

/** Organization-wide resources: an inbox-restricted key is refused with 403 inbox_restricted where it may not act. */
const ORGANIZATION_WIDE = new Set(["domain_id", "webhook_id"]);

/**
 * What an inbox-restricted key of the owner gets (README, Error codes): another inbox's data is 404 not_found;
 * acting on an organization-wide resource is 403 inbox_restricted; reading the organization's domains and their
 * traffic is not inbox data, so it is allowed.
 */
function restrictedAnswer(route: Route): { status: number; error?: string } {
  if (!route.pathFields.some((f) => ORGANIZATION_WIDE.has(f.name))) return { status: 404, error: "not_found" };
  return route.verb === "GET" ? { status: 200 } : { status: 403, error: "inbox_restricted" };
}

describe("cross-tenant matrix over every route with an id", () => {
  let owner: Tenant;
  let resources: OwnedResources;
  beforeAll(async () => {
    owner = await app.createTenant();
    resources = await ownedResources(owner);
  });

  test("the matrix covers every id-taking route of the contract, with a resource for every kind of id", async () => {
    expect(idRoutes.length).toBeGreaterThanOrEqual(19);
    // Every route of the contract is served: none answers 501.
    expect(routes.filter((r) => r.unimplemented)).toEqual([]);
    for (const route of idRoutes) {
      for (const field of route.pathFields) expect(resources.ids, `${route.verb} ${route.template}`).toHaveProperty(field.name);
      bodyOf(route, resources.ids);
    }
    // Every kind of resource made is named by some route: none is left over from a route that no longer exists.
    expect(new Set(idRoutes.flatMap((r) => r.pathFields.map((f) => f.name)))).toEqual(new Set(Object.keys(resources.ids)));
    // The owner's rows are there to be compared: each kind of resource has at least one.
    const rows = await ownerRows(owner.organizationId);
    for (const table of ["organizations", "inboxes", "threads", "messages", "attachments", "submissions", "customer_domains", "webhook_endpoints", "uploads", "sender_rules"]) {
      expect(rows[table], table).toMatch(/^[1-9]\d*:[0-9a-f]{32}$/);
    }
  });

  test.each(idRoutes.filter((r) => r.verb === "GET").map((r) => [`${r.verb} ${r.template}`, r] as const))(
    "%s answers the owner's own key with its success status (so the 404s below are about the caller)",
    async (_name, route) => {
      const res = await owner.request(route.verb, pathOf(route, resources.ids));
      expect(res.status, JSON.stringify(res.body)).toBe(route.successStatus);
    },
  );

  test.each(idRoutes.filter((r) => r.verb !== "GET").map((r) => [`${r.verb} ${r.template}`, r] as const))(
    "%s answers the owner's own key with its success status and changes the owner's rows (so the checks below can see a change)",
    async (_name, route) => {
      // A fresh organization for each write, so no write of this check changes what the others use.
      const other = await app.createTenant();
      const own = await ownedResources(other);
      const before = await ownerRows(other.organizationId);
      const res = await other.request(route.verb, pathOf(route, own.ids), {
        body: bodyOf(route, own.ids),
        headers: { "idempotency-key": uniqueName("owner") },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(route.successStatus);
      expect(await ownerRows(other.organizationId)).not.toEqual(before);
    },
  );

  test.each(idRoutes.map((r) => [`${r.verb} ${r.template}`, r] as const))(
    "%s answers 404 to another organization's key and changes nothing",
    async (_name, route) => {
      const intruder = await app.createTenant();
      const before = await ownerRows(owner.organizationId);
      const res = await intruder.request(route.verb, pathOf(route, resources.ids), {
        body: bodyOf(route, resources.ids),
        headers: { "idempotency-key": uniqueName("intruder") },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(404);
      expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
      expect(await ownerRows(owner.organizationId)).toEqual(before);
    },
  );

  test.each(
    idRoutes.map((r) => {
      const answer = restrictedAnswer(r);
      return [`${r.verb} ${r.template}`, `${answer.status} ${answer.error ?? ""}`.trim(), answer, r] as const;
    }),
  )(
    "%s answers an inbox-restricted key of the same organization %s and changes nothing",
    async (_name, _label, answer, route) => {
      const restricted = await owner.issueKey({ scopes: ["*"], inboxIds: [resources.otherInboxId] });
      const before = await ownerRows(owner.organizationId);
      const res = await owner.request(route.verb, pathOf(route, resources.ids), {
        body: bodyOf(route, resources.ids),
        headers: { "x-api-key": restricted.key, "idempotency-key": uniqueName("restricted") },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(answer.status);
      if (answer.error) expect(res.body).toEqual({ error: answer.error, message: expect.any(String) });
      expect(await ownerRows(owner.organizationId)).toEqual(before);
    },
  );
});

function pathOf(route: Route, ids: OwnedResources["ids"]): string {
  return route.template.replace(/\{([a-z_]+)\}/g, (_m, name: string) => ids[name]!);
}
