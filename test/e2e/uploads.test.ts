// Uploads through the real service: raw bytes on the JSON face, the same RPC on Connect, gRPC and MCP, kept in
// PostgreSQL, scanned by the built-in scanner or the run's real clamd before they are kept, counted against the
// organization's upload storage, scoped to the organization (and to the key, for a key restricted to inboxes),
// deleted by the expiry reconciler after UPLOAD_TTL. Sends that attach uploads are tested in rich-mail.test.ts.
import { createHash, randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { UploadService } from "../../gen/mailbox/v1/upload_service_pb.js";
import { readUploadContent } from "../../src/db/tables/uploads.js";
import { TenantStore } from "../../src/db/tenant-store.js";
import type { DomainError } from "../../src/errors.js";
import { EICAR } from "../../src/scanning/builtin.js";
import { reconcile } from "../../src/jobs/periodic-jobs.js";
import { uploadExpiryReconciler } from "../../src/uploads/expiry.js";
import { uploadedFiles } from "../../src/uploads/uploads.js";
import { EICAR_SIGNATURE } from "../support/clamd.js";
import { FACES, exchange } from "../support/edge-client.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { principalOf } from "../support/principal.js";

const KiB = 1024;
const GiB = 1024 ** 3;
/** Small limits, cheap to reach: a file may have 256 KiB, an organization keep 600 KiB. */
const MESSAGE_CONTENT_BYTES = 256 * KiB;
const STORAGE_BYTES = 600 * KiB;

let app: TestApp;
const others: TestApp[] = [];
beforeAll(async () => {
  app = await startTestApp({
    LIMIT_MESSAGE_CONTENT_BYTES: String(MESSAGE_CONTENT_BYTES),
    LIMIT_UPLOAD_STORAGE_BYTES: String(STORAGE_BYTES),
    API_MAX_REQUEST_BYTES: String(16 * KiB),
  });
});
afterAll(async () => {
  for (const a of [app, ...others]) await a?.stop();
});

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

interface RawAnswer {
  status: number;
  headers: Headers;
  body: any;
}

/** POST /v1/uploads with raw bytes, as curl --data-binary would. */
async function upload(target: TestApp, key: string, bytes: Uint8Array, query: string, contentType?: string): Promise<RawAnswer> {
  const res = await fetch(`${target.baseUrl}/v1/uploads${query}`, {
    method: "POST",
    headers: { "x-api-key": key, ...(contentType === undefined ? {} : { "content-type": contentType }) },
    body: bytes,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === "" ? undefined : JSON.parse(text) };
}

async function storedRows(organizationId: string): Promise<{ id: string; size: number }[]> {
  return app.db.sql.query("select id, size from uploads where organization_id = $1 order by created_at", [organizationId]);
}

describe("uploads on every face", () => {
  test("the JSON face takes the raw body: sanitised filename, type without parameters, size, SHA-256, expiry after UPLOAD_TTL", async () => {
    const tenant = await app.createTenant();
    const bytes = randomBytes(100 * KiB);
    const res = await upload(app, tenant.key, bytes, "?filename=..%2F..%2FRechnung%20M%C3%A4rz%E2%80%AE.pdf", "Application/PDF; charset=binary");
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^upl_[a-f0-9]{24}$/),
      filename: "Rechnung März.pdf",
      contentType: "application/pdf",
      size: bytes.length,
      sha256: sha256(bytes),
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      expiresAt: expect.any(String),
    });
    expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt)).toBe(24 * 3_600_000);
    expect((await tenant.request("GET", `/v1/uploads/${res.body.id}`)).body).toEqual(res.body);
    // Kept in chunks, every byte, by the key that made it.
    const [row] = await app.db.sql.query<{ created_by_key_id: string; source: string }>("select created_by_key_id, source from uploads where id = $1", [res.body.id]);
    expect(row).toEqual({ created_by_key_id: tenant.keyId, source: "upload" });
    expect(sha256(await readUploadContent(app.db.sql, tenant.organizationId, { id: res.body.id, size: bytes.length }))).toBe(sha256(bytes));
    const chunks = await app.db.sql.query<{ n: number }>("select count(*)::int as n from upload_chunks where upload_id = $1", [res.body.id]);
    expect(chunks[0]!.n).toBe(1);

    expect((await tenant.request("DELETE", `/v1/uploads/${res.body.id}`)).status).toBe(204);
    expect(await tenant.request("GET", `/v1/uploads/${res.body.id}`)).toMatchObject({ status: 404, body: { error: "not_found" } });
    expect(await storedRows(tenant.organizationId)).toEqual([]);
  });

  test("a body without Content-Type is application/octet-stream; a file, a filename and a type are required as the contract says", async () => {
    const tenant = await app.createTenant();
    expect((await upload(app, tenant.key, Buffer.from("x"), "?filename=a.bin")).body).toMatchObject({ contentType: "application/octet-stream", size: 1 });
    expect(await upload(app, tenant.key, new Uint8Array(), "?filename=empty.txt", "text/plain")).toMatchObject({ status: 400, body: { error: "invalid_request", message: "the file is empty" } });
    expect(await upload(app, tenant.key, Buffer.from("x"), "", "text/plain")).toMatchObject({ status: 400, body: { error: "invalid_request" } });
    expect(await upload(app, tenant.key, Buffer.from("x"), `?filename=${"a".repeat(256)}`, "text/plain")).toMatchObject({ status: 400 });
    expect(await upload(app, tenant.key, Buffer.from("x"), "?filename=a.txt", "not a type")).toMatchObject({ status: 400, body: { error: "invalid_request" } });
    expect(await upload(app, tenant.key, Buffer.from("x"), "?filename=a.txt&other=1", "text/plain")).toMatchObject({ status: 400 });
    const readOnly = await tenant.issueKey({ scopes: ["mailbox:read"] });
    expect(await upload(app, readOnly.key, Buffer.from("x"), "?filename=a.txt", "text/plain")).toMatchObject({ status: 403, body: { error: "missing_scope" } });
  });

  test.each([
    ["Connect", (t: Tenant) => t.connect(UploadService)],
    ["gRPC", (t: Tenant) => t.grpc(UploadService)],
    ["gRPC-Web", (t: Tenant) => t.grpcWeb(UploadService)],
  ])("%s carries the same RPC: create, read, delete", async (_face, clientOf) => {
    const tenant = await app.createTenant();
    const client = clientOf(tenant);
    const data = randomBytes(40 * KiB);
    const { upload: made } = await client.createUpload({ filename: "photo.jpg", content: { contentType: "image/jpeg", data } });
    expect(made).toMatchObject({ filename: "photo.jpg", contentType: "image/jpeg", size: BigInt(data.length), sha256: sha256(data) });
    expect((await client.getUpload({ uploadId: made!.id })).upload).toEqual(made);
    // The JSON face reads what an RPC face made.
    expect((await tenant.request("GET", `/v1/uploads/${made!.id}`)).body).toMatchObject({ id: made!.id, size: data.length });
    await client.deleteUpload({ uploadId: made!.id });
    const gone = await client.getUpload({ uploadId: made!.id }).catch((e: unknown) => ConnectError.from(e));
    expect(gone).toBeInstanceOf(ConnectError);
    expect((gone as ConnectError).code).toBe(Code.NotFound);
  });

  test("MCP's create_upload and get_upload take and describe the same file (base64 in the tool's arguments)", async () => {
    const tenant = await app.createTenant();
    const client = new Client({ name: "uploads-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", app.baseUrl), { requestInit: { headers: { "x-api-key": tenant.key } } }));
    try {
      const data = Buffer.from("Invoice 4711: 120.00 EUR\n");
      const made = (await client.callTool({
        name: "create_upload",
        arguments: { filename: "invoice.txt", content: { contentType: "text/plain", data: data.toString("base64") } },
      })) as CallToolResult;
      expect(made.isError, JSON.stringify(made.content)).toBeFalsy();
      expect(made.structuredContent).toMatchObject({ filename: "invoice.txt", contentType: "text/plain", size: data.length, sha256: sha256(data) });
      const id = (made.structuredContent as { id: string }).id;
      const read = (await client.callTool({ name: "get_upload", arguments: { uploadId: id } })) as CallToolResult;
      expect(read.structuredContent).toEqual(made.structuredContent);
    } finally {
      await client.close();
    }
  });
});

describe("upload limits", () => {
  test("a file larger than a message may be is 413 attachment_too_large, and nothing is kept", async () => {
    const tenant = await app.createTenant();
    const res = await upload(app, tenant.key, randomBytes(MESSAGE_CONTENT_BYTES + 1), "?filename=big.bin", "application/octet-stream");
    expect(res).toMatchObject({ status: 413, body: { error: "attachment_too_large" } });
    expect(await storedRows(tenant.organizationId)).toEqual([]);
  });

  test.each(FACES)("a 1 GiB body on the %s face is refused with 413 as it streams in", async (face) => {
    const tenant = await app.createTenant();
    const operation = { rest: "/v1/uploads?filename=huge.bin", rpc: "/mailbox.v1.UploadService/CreateUpload" };
    const answer = await exchange(app.baseUrl, { face, operation, key: tenant.key, streamBytes: GiB });
    expect(answer.status === 413 || (face !== "rest" && face !== "connect"), JSON.stringify(answer)).toBe(true);
    expect(answer.errorCode).toBe("payload_too_large");
    expect(answer.sentBytes).toBeLessThan(64 * 1024 ** 2);
    expect(await storedRows(tenant.organizationId)).toEqual([]);
  });

  test("an organization keeps at most LIMIT_UPLOAD_STORAGE_BYTES of unexpired uploads: 403 beyond it, room again after a delete", async () => {
    const tenant = await app.createTenant();
    const first = await upload(app, tenant.key, randomBytes(250 * KiB), "?filename=1.bin", "application/octet-stream");
    const second = await upload(app, tenant.key, randomBytes(250 * KiB), "?filename=2.bin", "application/octet-stream");
    expect([first.status, second.status]).toEqual([201, 201]);
    const third = await upload(app, tenant.key, randomBytes(250 * KiB), "?filename=3.bin", "application/octet-stream");
    expect(third).toMatchObject({ status: 403, body: { error: "upload_storage_limit_reached" } });
    expect(third.body.message).toContain(String(STORAGE_BYTES));
    // Another organization's storage is its own.
    const other = await app.createTenant();
    expect((await upload(app, other.key, randomBytes(250 * KiB), "?filename=x.bin", "application/octet-stream")).status).toBe(201);
    expect((await tenant.request("DELETE", `/v1/uploads/${first.body.id}`)).status).toBe(204);
    expect((await upload(app, tenant.key, randomBytes(250 * KiB), "?filename=3.bin", "application/octet-stream")).status).toBe(201);
    expect((await tenant.request("GET", "/v1/me")).body.platformLimits.uploadStorageBytes).toBe(STORAGE_BYTES);
  });

  test("concurrent uploads past the limit are counted one at a time: of three that fit two by two, two are kept", async () => {
    const tenant = await app.createTenant();
    const answers = await Promise.all([1, 2, 3].map((n) => upload(app, tenant.key, randomBytes(250 * KiB), `?filename=${n}.bin`, "application/octet-stream")));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 403]);
    const rows = await storedRows(tenant.organizationId);
    expect(rows.reduce((sum, r) => sum + r.size, 0)).toBe(500 * KiB);
  });
});

describe("tenant scope", () => {
  test("another organization's upload id is 404 to read and to delete, and stays", async () => {
    const owner = await app.createTenant();
    const intruder = await app.createTenant();
    const made = await upload(app, owner.key, Buffer.from("private"), "?filename=p.txt", "text/plain");
    expect(await intruder.request("GET", `/v1/uploads/${made.body.id}`)).toMatchObject({ status: 404, body: { error: "not_found" } });
    expect(await intruder.request("DELETE", `/v1/uploads/${made.body.id}`)).toMatchObject({ status: 404, body: { error: "not_found" } });
    expect((await owner.request("GET", `/v1/uploads/${made.body.id}`)).status).toBe(200);
  });

  test("a key restricted to inboxes sees only the uploads it made; the organization's other keys see them all", async () => {
    const owner = await app.createTenant();
    const inbox = await owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("upl"), displayName: "Uploads" } });
    const restricted = await owner.issueKey({ scopes: ["*"], inboxIds: [inbox.body.id] });
    const ownerUpload = await upload(app, owner.key, Buffer.from("owner"), "?filename=o.txt", "text/plain");
    const restrictedUpload = await upload(app, restricted.key, Buffer.from("agent"), "?filename=r.txt", "text/plain");
    const asRestricted = (path: string, method = "GET") => owner.request(method, path, { headers: { "x-api-key": restricted.key } });
    expect((await asRestricted(`/v1/uploads/${restrictedUpload.body.id}`)).status).toBe(200);
    expect((await asRestricted(`/v1/uploads/${ownerUpload.body.id}`)).status).toBe(404);
    expect((await asRestricted(`/v1/uploads/${ownerUpload.body.id}`, "DELETE")).status).toBe(404);
    expect((await owner.request("GET", `/v1/uploads/${restrictedUpload.body.id}`)).status).toBe(200);
  });
});

describe("the uploads a send names", () => {
  test("come with their bytes, each once; one that does not exist, expired or is not the key's is 404 upload_not_found", async () => {
    const owner = await app.createTenant();
    const store = new TenantStore(() => app.db.fork(), owner.organizationId, app.db.sql);
    const bytes = randomBytes(250 * KiB);
    const big = await upload(app, owner.key, bytes, "?filename=big.bin", "application/octet-stream");
    const small = await upload(app, owner.key, Buffer.from("small"), "?filename=small.txt", "text/plain");
    const principal = await principalOf(app.db, owner.key);
    const files = await uploadedFiles(store, principal, [big.body.id, small.body.id, big.body.id], {});
    expect([...files.keys()]).toEqual([big.body.id, small.body.id]);
    expect(sha256(files.get(big.body.id)!.content)).toBe(sha256(bytes));
    expect(files.get(small.body.id)).toMatchObject({ upload: { filename: "small.txt", contentType: "text/plain", size: 5 }, content: Buffer.from("small") });

    const notFound = (ids: string[], who = principal, now?: Date) =>
      uploadedFiles(store, who, ids, now ? { now: () => now } : {}).then(
        () => undefined,
        (e: DomainError) => [e.errorCode, e.message],
      );
    expect(await notFound([small.body.id, "upl_000000000000000000000000"])).toEqual(["upload_not_found", "upload upl_000000000000000000000000 not found"]);
    expect(await notFound([small.body.id], principal, new Date(Date.parse(small.body.expiresAt)))).toEqual(["upload_not_found", `upload ${small.body.id} not found`]);
    const inbox = await owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("named"), displayName: "Named" } });
    const restricted = await owner.issueKey({ scopes: ["*"], inboxIds: [inbox.body.id] });
    expect(await notFound([small.body.id], await principalOf(app.db, restricted.key))).toEqual(["upload_not_found", `upload ${small.body.id} not found`]);
    const otherStore = new TenantStore(() => app.db.fork(), (await app.createTenant()).organizationId, app.db.sql);
    expect(await uploadedFiles(otherStore, principal, [small.body.id], {}).catch((e: DomainError) => e.errorCode)).toBe("upload_not_found");
  });
});

describe("scanning before an upload is kept", () => {
  test("the built-in scanner's EICAR finding is 422 attachment_infected, and nothing is kept", async () => {
    const tenant = await app.createTenant();
    const res = await upload(app, tenant.key, EICAR, "?filename=eicar.txt", "text/plain");
    expect(res).toMatchObject({ status: 422, body: { error: "attachment_infected" } });
    expect(res.body.message).toContain("EICAR-Test-File");
    expect(await storedRows(tenant.organizationId)).toEqual([]);
  });

  test("with clamd: EICAR is refused with clamd's finding, a plain file kept", async () => {
    const provided = inject("clamd");
    if ("failure" in provided) throw new Error(`the test clamd did not start: ${provided.failure}`);
    const scanned = await startTestApp({ CLAMD_ADDRESS: provided.tcpAddress });
    others.push(scanned);
    const tenant = await scanned.createTenant();
    const infected = await upload(scanned, tenant.key, Buffer.concat([Buffer.from("Dear agent,\r\n"), EICAR]), "?filename=note.txt", "text/plain");
    expect(infected).toMatchObject({ status: 422, body: { error: "attachment_infected" } });
    expect(infected.body.message).toContain(EICAR_SIGNATURE);
    expect((await upload(scanned, tenant.key, Buffer.from("quarterly numbers"), "?filename=q.txt", "text/plain")).status).toBe(201);
    expect((await storedRows(tenant.organizationId)).length).toBe(1);
  });

  test("while the scanner cannot be reached an upload is 503 scan_unavailable with Retry-After, and nothing is kept", async () => {
    // Port 1 of loopback: nothing listens, every connection is refused at once.
    const unscanned = await startTestApp({ CLAMD_ADDRESS: "127.0.0.1:1" });
    others.push(unscanned);
    const tenant = await unscanned.createTenant();
    const res = await upload(unscanned, tenant.key, Buffer.from("hello"), "?filename=h.txt", "text/plain");
    expect(res).toMatchObject({ status: 503, body: { error: "scan_unavailable" } });
    expect(res.headers.get("retry-after")).toBe("30");
    expect(res.body.message).not.toContain("127.0.0.1");
    expect(await storedRows(tenant.organizationId)).toEqual([]);
  });
});

describe("expiry", () => {
  test("an upload past UPLOAD_TTL is gone at once for reads and storage, and the expiry reconciler deletes its rows", async () => {
    const short = await startTestApp({ UPLOAD_TTL: "5s", LIMIT_UPLOAD_STORAGE_BYTES: String(150 * KiB) });
    others.push(short);
    const tenant = await short.createTenant();
    const made = await upload(short, tenant.key, randomBytes(100 * KiB), "?filename=soon.bin", "application/octet-stream");
    expect(made.status).toBe(201);
    expect(Date.parse(made.body.expiresAt) - Date.parse(made.body.createdAt)).toBe(5000);
    // While it is kept, a second one does not fit.
    expect((await upload(short, tenant.key, randomBytes(100 * KiB), "?filename=later.bin", "application/octet-stream")).status).toBe(403);
    await eventually(async () => ((await tenant.request("GET", `/v1/uploads/${made.body.id}`)).status === 404 ? true : undefined), 30_000);
    // Expired, it no longer counts, although its rows are still there.
    const later = await upload(short, tenant.key, randomBytes(100 * KiB), "?filename=later.bin", "application/octet-stream");
    expect(later.status).toBe(201);
    expect((await storedRows(tenant.organizationId)).map((r) => r.id)).toEqual([made.body.id, later.body.id]);

    const live = await upload(app, (await app.createTenant()).key, Buffer.from("live"), "?filename=live.txt", "text/plain");
    // A round just after the first expired: the later one, made after that, is not due yet.
    const roundAt = new Date(Date.parse(made.body.expiresAt) + 1);
    expect(await reconcile(uploadExpiryReconciler(short.db, () => roundAt))).toBeGreaterThanOrEqual(1);
    const left = await short.db.sql.query<{ id: string }>("select id from uploads where id = any($1)", [[made.body.id, later.body.id, live.body.id]]);
    expect(left.map((r) => r.id).sort()).toEqual([later.body.id, live.body.id].sort());
    const chunks = await short.db.sql.query<{ n: number }>("select count(*)::int as n from upload_chunks where upload_id = $1", [made.body.id]);
    expect(chunks[0]!.n).toBe(0);
  });
});


