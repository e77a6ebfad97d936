// The fetcher of URL attachments against real HTTPS servers on loopback (port 443 of 127.0.44.x, the test CA's
// certificate), with the address policy on: one server is exempt (as WEBHOOK_ALLOW_HOSTS lists a test receiver), the
// other is what it is, a private address, and must never be asked. Then a fetched file kept like an upload.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { TenantStore } from "../../src/db/tenant-store.js";
import { DomainError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { fetchUrlAttachment, keepUrlAttachment, type UrlFetchOptions } from "../../src/outbound/url-attachments.js";
import { EICAR } from "../../src/scanning/builtin.js";
import { configuredUploadDeps } from "../../src/uploads/uploads.js";
import { startHttpsFileServer, type HttpsFileServer } from "../support/https-file-server.js";
import { startTestApp, type TestApp } from "../support/harness.js";
import { principalOf } from "../support/principal.js";

let allowed: HttpsFileServer;
let privateServer: HttpsFileServer;
let options: UrlFetchOptions;
beforeAll(async () => {
  allowed = await startHttpsFileServer();
  privateServer = await startHttpsFileServer();
  options = { policy: { allowHosts: [allowed.host] }, timeoutMs: 3000, maxRedirects: 3, maxBytes: 64 * 1024 };
});
afterAll(async () => {
  await Promise.all([allowed?.close(), privateServer?.close()]);
});

let n = 0;
/** A fresh path ending in `name`. */
const path = (name: string) => `/${++n}/${name}`;

/** The refusal a fetch ends with: its code and message. */
async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const e = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DomainError)) throw new Error(`expected a refusal, got ${String(e)}`);
  return { code: e.errorCode, message: e.message };
}

describe("fetching a URL attachment", () => {
  test("takes the bytes, Content-Type and the Content-Disposition filename (RFC 5987 before the plain one)", async () => {
    const bytes = randomBytes(20_000);
    const url = allowed.route(path("invoice"), (_req, res) =>
      res
        .writeHead(200, {
          "content-type": "application/pdf",
          "content-disposition": `attachment; filename="Rechnung.pdf"; filename*=UTF-8''Rechnung%20M%C3%A4rz.pdf`,
        })
        .end(bytes),
    );
    const file = await fetchUrlAttachment(url, "attachments[0]", options);
    expect(file).toEqual({ url, filename: "Rechnung März.pdf", contentType: "application/pdf", content: bytes });
  });

  test("names the file by the last segment of the path without a Content-Disposition, and asks for the bytes as they are", async () => {
    let encoding: string | undefined;
    const p = path("report%20Q1.csv");
    const url = allowed.route(p, (req, res) => {
      encoding = req.headers["accept-encoding"];
      res.writeHead(200, { "content-type": "text/csv" }).end("a,b\n");
    });
    expect(await fetchUrlAttachment(url, "attachments[0]", options)).toMatchObject({ filename: `report Q1.csv`, content: Buffer.from("a,b\n") });
    expect(encoding).toBe("identity");
  });

  test("follows redirects, relative and absolute, each checked, up to ATTACHMENT_URL_MAX_REDIRECTS", async () => {
    const final = allowed.route(path("final.txt"), (_req, res) => res.writeHead(200).end("here"));
    const second = allowed.route(path("second"), (_req, res) => res.writeHead(301, { location: final }).end());
    const first = allowed.route(path("first"), (_req, res) => res.writeHead(302, { location: new URL(second).pathname }).end());
    expect(await fetchUrlAttachment(first, "attachments[0]", options)).toMatchObject({ url: final, content: Buffer.from("here") });
    const loop = path("loop");
    const url = allowed.route(loop, (_req, res) => res.writeHead(307, { location: loop }).end());
    expect(await refusal(fetchUrlAttachment(url, "attachments[1]", options))).toEqual({
      code: "attachment_url_refused",
      message: "attachments[1].url: more than 3 redirects",
    });
    expect(allowed.hits(loop)).toBe(4);
  });

  test("refuses a private address given literally, before any connection", async () => {
    const p = path("secret");
    const url = privateServer.route(p, (_req, res) => res.writeHead(200).end("secret"));
    const refused = await refusal(fetchUrlAttachment(url, "attachments[0]", options));
    expect(refused).toEqual({ code: "attachment_url_refused", message: `attachments[0].url: ${privateServer.host} is not a public address (loopback)` });
    expect(privateServer.hits(p)).toBe(0);
  });

  test("refuses a redirect to a private address, never asking it", async () => {
    const p = path("metadata");
    const target = privateServer.route(p, (_req, res) => res.writeHead(200).end("credentials"));
    const url = allowed.route(path("jump"), (_req, res) => res.writeHead(302, { location: target }).end());
    expect(await refusal(fetchUrlAttachment(url, "attachments[0]", options))).toMatchObject({ code: "attachment_url_refused" });
    expect(privateServer.hits(p)).toBe(0);
  });

  test("checks a name's addresses as it connects: one private address among them refuses it (DNS rebinding too)", async () => {
    const p = path("rebind");
    privateServer.route(p, (_req, res) => res.writeHead(200).end("internal"));
    const resolveAll = async (name: string) =>
      name === "files.example.test" ? [{ address: "93.184.215.14", family: 4 }, { address: privateServer.host, family: 4 }] : [];
    const refused = await refusal(fetchUrlAttachment(`https://files.example.test${p}`, "attachments[0]", { ...options, resolveAll }));
    expect(refused).toEqual({
      code: "attachment_url_refused",
      message: `attachments[0].url: files.example.test resolves to ${privateServer.host}, which is not a public address (loopback)`,
    });
    expect(privateServer.hits(p)).toBe(0);
  });

  test("with the policy's exemption gone, the exempt server is a private address like any other", async () => {
    const p = path("exempt");
    const url = allowed.route(p, (_req, res) => res.writeHead(200).end("x"));
    expect(await refusal(fetchUrlAttachment(url, "attachments[0]", { ...options, policy: { allowHosts: [] } }))).toMatchObject({ code: "attachment_url_refused" });
    expect(allowed.hits(p)).toBe(0);
  });

  test.each([
    ["plain http", "http://files.example.com/a.pdf", "must be an https:// URL"],
    ["another port", "https://files.example.com:8443/a.pdf", "must use port 443"],
    ["credentials", "https://user:pw@files.example.com/a.pdf", "must not contain credentials"],
    ["a local name", "https://intranet.local/a.pdf", "intranet.local is not a public host name"],
  ])("refuses %s by the webhook URL rules", async (_what, url, why) => {
    expect(await refusal(fetchUrlAttachment(url, "attachments[3]", options))).toEqual({ code: "attachment_url_refused", message: `attachments[3].url: ${why}` });
  });

  test("fails on an answer other than 200, and on a compressed one", async () => {
    const missing = allowed.route(path("missing"), (_req, res) => res.writeHead(404).end("no"));
    expect(await refusal(fetchUrlAttachment(missing, "attachments[0]", options))).toEqual({
      code: "attachment_url_failed",
      message: "attachments[0].url: the fetch failed: HTTP 404",
    });
    const gzipped = allowed.route(path("gz"), (_req, res) => res.writeHead(200, { "content-encoding": "gzip" }).end(Buffer.from([0x1f, 0x8b])));
    expect(await refusal(fetchUrlAttachment(gzipped, "attachments[0]", options))).toMatchObject({ code: "attachment_url_failed" });
  });

  test("refuses a file past maxBytes, declared or as it streams, with 413 attachment_url_too_large", async () => {
    const declared = allowed.route(path("declared"), (_req, res) => {
      res.writeHead(200, { "content-length": String(1024 ** 3) });
      res.write(Buffer.alloc(1024));
    });
    expect(await refusal(fetchUrlAttachment(declared, "attachments[0]", options))).toMatchObject({ code: "attachment_url_too_large" });
    let closed = false;
    const streamed = allowed.route(path("streamed"), (_req, res) => {
      res.on("close", () => (closed = true));
      res.writeHead(200);
      // Chunked, without a length: 16 KiB at a time until the client goes.
      const pump = () => {
        while (!res.destroyed && res.write(Buffer.alloc(16 * 1024))) {
          if (res.writableLength > 1024 ** 2) break;
        }
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    });
    expect(await refusal(fetchUrlAttachment(streamed, "attachments[0]", options))).toEqual({
      code: "attachment_url_too_large",
      message: "attachments[0].url: the file is larger than an attachment may be (65536 bytes)",
    });
    await expect.poll(() => closed, { timeout: 10_000 }).toBe(true);
  });

  test("gives up at the time limit: a server that never answers, and one that stops in the middle of the file", async () => {
    const silent = allowed.route(path("silent"), () => undefined);
    const quick = { ...options, timeoutMs: 500 };
    expect(await refusal(fetchUrlAttachment(silent, "attachments[0]", quick))).toEqual({
      code: "attachment_url_failed",
      message: "attachments[0].url: the fetch failed: no file within 500 ms",
    });
    const stalled = allowed.route(path("stalled"), (_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("only ten b");
    });
    expect(await refusal(fetchUrlAttachment(stalled, "attachments[0]", quick))).toMatchObject({ code: "attachment_url_failed" });
  });
});

describe("keeping a fetched file like an upload", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ WEBHOOK_ALLOW_HOSTS: allowed.host });
  });
  afterAll(() => app?.stop());

  async function keeper() {
    const tenant = await app.createTenant();
    const principal = await principalOf(app.db, tenant.key);
    const store = new TenantStore(() => app.db.fork(), tenant.organizationId, app.db.sql);
    const deps = { ...configuredUploadDeps(app.config, createLogger("error")), fetch: { policy: app.config.webhooks, timeoutMs: 3000, maxRedirects: 3 } };
    return { keep: (url: string) => keepUrlAttachment(store, principal, url, "attachments[0]", deps), organizationId: tenant.organizationId };
  }

  test("scans it, keeps it with its URL, and counts it against the organization's upload storage", async () => {
    const { keep, organizationId } = await keeper();
    const url = allowed.route(path("terms"), (_req, res) => res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end("Terms of service"));
    const { upload: kept, content } = await keep(url);
    expect(content.toString()).toBe("Terms of service");
    expect(kept).toMatchObject({ source: "url", sourceUrl: url, filename: "terms", contentType: "text/plain", size: 16 });
    const rows = await app.db.sql.query("select id, source, source_url from uploads where organization_id = $1", [organizationId]);
    expect(rows).toEqual([{ id: kept.id, source: "url", source_url: url }]);
  });

  test("an infected file from a URL is 422 attachment_infected, and nothing is kept", async () => {
    const { keep, organizationId } = await keeper();
    const url = allowed.route(path("eicar.com"), (_req, res) => res.writeHead(200).end(EICAR));
    expect(await refusal(keep(url))).toMatchObject({ code: "attachment_infected" });
    expect(await app.db.sql.query("select 1 from uploads where organization_id = $1", [organizationId])).toEqual([]);
  });
});
