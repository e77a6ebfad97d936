// Attachment scanning end to end: stored messages' attachments scanned by the attachmentScan workflow on a real
// worker, against a real clamd (Debian's clamav-daemon with a local EICAR signature, started by the global setup)
// or the built-in scanner, with verdicts read back from PostgreSQL and through the download API.
import { afterEach, beforeAll, describe, expect, inject, test } from "vitest";
import { Attachment, Message } from "../../src/db/entities/index.js";
import { findFreePort } from "../../src/runtime/free-port.js";
import { attachmentScanReconciler } from "../../src/scanning/attachment-scan-reconciler.js";
import { reconcile } from "../../src/jobs/periodic-jobs.js";
import { EICAR } from "../../src/scanning/builtin.js";
import { createClamdScanner, parseClamdAddress } from "../../src/scanning/clamd.js";
import { attachmentScanWorkflowId, createAttachmentScanStarter, inboxKey, organizationKey } from "../../src/temporal/client.js";
import type { attachmentScan } from "../../workflows/attachment-scan.js";
import { CLAMD_STREAM_MAX_BYTES, EICAR_SIGNATURE } from "../support/clamd.js";
import { startTestApp, uniqueName, type TestApp, type Tenant } from "../support/harness.js";
import { storeInbound } from "../support/mail-fixtures.js";

let clamd: { readonly tcpAddress: string; readonly unixAddress: string; readonly version: string };
beforeAll(() => {
  const provided = inject("clamd");
  if ("failure" in provided) throw new Error(`the test clamd did not start: ${provided.failure}`);
  clamd = provided;
});

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
});

/** A service and worker whose scanner is configured by `env`, with a tenant and an inbox. */
async function scanningApp(env: Record<string, string>): Promise<{ app: TestApp; tenant: Tenant; inboxId: string }> {
  const app = await startTestApp(env);
  apps.push(app);
  await app.startWorker();
  const tenant = await app.createTenant();
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("scan"), displayName: "Scan" } });
  expect(res.status).toBe(201);
  return { app, tenant, inboxId: res.body.id };
}

async function storeWithAttachments(app: TestApp, tenant: Tenant, inboxId: string, attachments: { filename: string; content: string }[], at?: Date) {
  return storeInbound(app.db, {
    organizationId: tenant.organizationId,
    inboxId,
    ...(at ? { at } : {}),
    attachments: attachments.map((a) => ({ ...a, scanState: "unscanned" })),
  });
}

/** Starts the scan as inbound processing does, and waits for the workflow's result. */
async function scan(app: TestApp, tenant: Tenant, inboxId: string, messageId: string) {
  await createAttachmentScanStarter(app.temporal, app.config.temporalTaskQueue).start({ messageId, organizationId: tenant.organizationId, inboxId });
  return app.temporal.workflow.getHandle<typeof attachmentScan>(attachmentScanWorkflowId(messageId)).result();
}

async function scanStates(app: TestApp, messageId: string) {
  const em = app.db.fork();
  const attachments = await em.find(Attachment, { messageId }, { orderBy: { position: "asc" } });
  const message = await em.findOneOrFail(Message, { id: messageId });
  return {
    message: message.attachmentsScanState,
    attachments: attachments.map((a) => ({ state: a.scanState, detail: a.scanDetail, scanned: a.scannedAt !== null })),
  };
}

const EICAR_TEXT = EICAR.toString("latin1");

describe("scanning with clamd", () => {
  test("marks EICAR infected with clamd's signature name and a plain file clean, and only the clean one downloads", async () => {
    const { app, tenant, inboxId } = await scanningApp({ CLAMD_ADDRESS: clamd.tcpAddress });
    const { messageId, attachmentIds } = await storeWithAttachments(app, tenant, inboxId, [
      { filename: "eicar.com.txt", content: EICAR_TEXT },
      { filename: "notes.txt", content: "The meeting moved to 3pm.\n" },
    ]);

    expect(await scan(app, tenant, inboxId, messageId)).toEqual({ scanned: 2, state: "infected" });
    expect(await scanStates(app, messageId)).toEqual({
      message: "infected",
      attachments: [
        { state: "infected", detail: `${EICAR_SIGNATURE}.UNOFFICIAL`, scanned: true },
        { state: "clean", detail: null, scanned: true },
      ],
    });
    const clean = await tenant.request("GET", `/v1/messages/${messageId}/attachments/${attachmentIds[1]}`);
    expect(clean.status).toBe(200);
    expect(clean.body).toBe("The meeting moved to 3pm.\n");
    expect((await tenant.request("GET", `/v1/messages/${messageId}/attachments/${attachmentIds[0]}`)).status).toBe(403);
  });

  test("runs as attachment-scan/<messageId>, findable by organization and inbox", async () => {
    const { app, tenant, inboxId } = await scanningApp({ CLAMD_ADDRESS: clamd.unixAddress });
    const { messageId } = await storeWithAttachments(app, tenant, inboxId, [{ filename: "a.txt", content: "a" }]);
    expect(await scan(app, tenant, inboxId, messageId)).toEqual({ scanned: 1, state: "clean" });
    const description = await app.temporal.workflow.getHandle(`attachment-scan/${messageId}`).describe();
    expect(description.type).toBe("attachmentScan");
    expect(description.typedSearchAttributes.get(organizationKey)).toBe(tenant.organizationId);
    expect(description.typedSearchAttributes.get(inboxKey)).toBe(inboxId);
  });

  test("stores error, never clean, when clamd cannot be reached, after retrying the scan as often and as far apart as configured", { timeout: 120_000 }, async () => {
    // Retries 0.1 s, 0.3 s and 0.9 s apart instead of the default 2 s, 6 s and 18 s.
    const { app, tenant, inboxId } = await scanningApp({
      CLAMD_ADDRESS: `127.0.0.1:${await findFreePort()}`,
      SCAN_TIMEOUT_MS: "2000",
      SCAN_ERROR_RETRY_INITIAL_MS: "100",
    });
    const { messageId, attachmentIds } = await storeWithAttachments(app, tenant, inboxId, [{ filename: "notes.txt", content: "harmless" }]);

    const started = Date.now();
    expect(await scan(app, tenant, inboxId, messageId)).toEqual({ scanned: 1, state: "error" });
    // At least the configured waits (1.3 s), and less than the default's alone (26 s) however loaded the machine.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1300);
    expect(Date.now() - started).toBeLessThan(26_000);
    const states = await scanStates(app, messageId);
    expect(states.message).toBe("error");
    expect(states.attachments[0]).toMatchObject({ state: "error", scanned: true });
    expect(states.attachments[0]!.detail).toMatch(/^clamd at 127\.0\.0\.1:\d+: connect ECONNREFUSED/);
    // The error verdict was retried before it was stored: the scan activity's last start was its fourth attempt.
    const history = await app.temporal.workflow.getHandle(attachmentScanWorkflowId(messageId)).fetchHistory();
    const attempts = (history.events ?? []).flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
    expect(Math.max(...attempts.map(Number))).toBe(4);
    expect((await tenant.request("GET", `/v1/messages/${messageId}/attachments/${attachmentIds[0]}`)).status).toBe(403);
  });
});

describe("the clamd client against a real clamd", () => {
  const meta = { filename: "a.bin", contentType: "application/octet-stream" };
  const over = (address: string) => createClamdScanner({ address: parseClamdAddress(address), timeoutMs: 10_000 });

  test("finds the EICAR string inside other content, over TCP and the unix socket", async () => {
    const content = Buffer.concat([Buffer.from("Dear agent,\r\nplease see below.\r\n"), EICAR, Buffer.from("\r\n-- \r\nSender\r\n")]);
    for (const address of [clamd.tcpAddress, clamd.unixAddress]) {
      expect(await over(address).scan(content, meta)).toEqual({ state: "infected", finding: `${EICAR_SIGNATURE}.UNOFFICIAL` });
    }
  });

  test("passes content of several chunks as clean", async () => {
    expect(await over(clamd.tcpAddress).scan(Buffer.alloc(300 * 1024, "lorem ipsum "), meta)).toEqual({ state: "clean" });
  });

  test("answers error, never clean, for a stream over clamd's StreamMaxLength", async () => {
    const verdict = await over(clamd.tcpAddress).scan(Buffer.alloc(CLAMD_STREAM_MAX_BYTES + 64 * 1024, "a"), meta);
    expect(verdict.state).toBe("error");
  });
});

describe("scanning with the built-in scanner", () => {
  test("flags EICAR and a script and passes a plain file when no clamd is configured", async () => {
    const { app, tenant, inboxId } = await scanningApp({});
    const { messageId } = await storeWithAttachments(app, tenant, inboxId, [
      { filename: "eicar.txt", content: EICAR_TEXT },
      { filename: "invoice.js", content: "WScript.Echo('hi')" },
      { filename: "notes.txt", content: "plain notes" },
    ]);
    expect(await scan(app, tenant, inboxId, messageId)).toEqual({ scanned: 3, state: "infected" });
    expect((await scanStates(app, messageId)).attachments).toEqual([
      { state: "infected", detail: "EICAR-Test-File", scanned: true },
      { state: "infected", detail: "Script.Extension", scanned: true },
      { state: "clean", detail: null, scanned: true },
    ]);
  });
});

describe("starting scans", () => {
  test("a repeated start scans nothing again and keeps the verdicts", async () => {
    const { app, tenant, inboxId } = await scanningApp({});
    const { messageId } = await storeWithAttachments(app, tenant, inboxId, [{ filename: "a.txt", content: "a" }]);
    const starter = createAttachmentScanStarter(app.temporal, app.config.temporalTaskQueue);
    const message = { messageId, organizationId: tenant.organizationId, inboxId };
    // Two starts while the first may still run join one workflow.
    await Promise.all([starter.start(message), starter.start(message)]);
    expect(await app.temporal.workflow.getHandle<typeof attachmentScan>(attachmentScanWorkflowId(messageId)).result()).toEqual({ scanned: 1, state: "clean" });
    const before = await scanStates(app, messageId);
    expect(await scan(app, tenant, inboxId, messageId)).toEqual({ scanned: 0, state: "clean" });
    expect(await scanStates(app, messageId)).toEqual(before);
  });

  test("the reconciler starts the scan of a message whose start was lost, and leaves young messages to inbound", async () => {
    const { app, tenant, inboxId } = await scanningApp({});
    const lost = await storeWithAttachments(app, tenant, inboxId, [{ filename: "a.txt", content: "a" }], new Date("2001-01-01T00:00:00Z"));
    const young = await storeWithAttachments(app, tenant, inboxId, [{ filename: "b.txt", content: "b" }]);
    // Other test files share the database: record the reconciler's starts (oldest first, so this old message is among
    // them), then start only this tenant's for real.
    const started: { messageId: string; organizationId: string; inboxId: string }[] = [];
    await reconcile(attachmentScanReconciler(app.db, { start: async (m) => void started.push(m) }));
    const ours = started.filter((m) => m.organizationId === tenant.organizationId);
    expect(ours).toEqual([{ messageId: lost.messageId, organizationId: tenant.organizationId, inboxId }]);
    expect(started.map((m) => m.messageId)).not.toContain(young.messageId);

    const starter = createAttachmentScanStarter(app.temporal, app.config.temporalTaskQueue);
    for (const m of ours) await starter.start(m);
    expect(await app.temporal.workflow.getHandle<typeof attachmentScan>(attachmentScanWorkflowId(lost.messageId)).result()).toEqual({
      scanned: 1,
      state: "clean",
    });
  });
});
