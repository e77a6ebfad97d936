// Inbox deletion: gone for reads at once, a second delete is 409 while the purge workflow has not finished,
// and the purge is a real Temporal workflow with a business-key id and search attributes.
import { afterAll, beforeAll, expect, test } from "vitest";
import { Attachment, Inbox, InboundRawMessage, Message, Thread } from "../../src/db/entities/index.js";
import { newUuid } from "../../src/ids.js";
import { storeInbound } from "../support/mail-fixtures.js";
import { inboxPurgeWorkflowId } from "../../src/temporal/client.js";
import { purgeReconciler } from "../../src/inboxes/purge-reconciler.js";
import { reconcile } from "../../src/jobs/periodic-jobs.js";
import { createInboxPurgeStarter } from "../../src/temporal/client.js";
import { SEARCH_ATTRIBUTE } from "../../src/temporal/search-attributes.js";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ PURGE_BATCH_SIZE: "10" });
});
afterAll(() => app?.stop());

test("a deleted inbox is 404 at once, 409 on a second delete while purging, then purged by the workflow", async () => {
  const tenant = await app.createTenant();
  const created = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("del"), displayName: "D" } });
  const id: string = created.body.id;

  // No worker polls this app's task queue yet, so the purge cannot finish before we look.
  const del = await tenant.request("DELETE", `/v1/inboxes/${id}`);
  expect(del.status).toBe(204);
  expect(del.body).toBe("");
  expect((await tenant.request("GET", `/v1/inboxes/${id}`)).status).toBe(404);
  expect((await tenant.request("GET", "/v1/inboxes")).body.inboxes).toEqual([]);
  const again = await tenant.request("DELETE", `/v1/inboxes/${id}`);
  expect(again.status).toBe(409);
  expect(again.body.error).toBe("inbox_delete_in_progress");

  const handle = app.temporal.workflow.getHandle(inboxPurgeWorkflowId(id));
  const description = await handle.describe();
  expect(description.status.name).toBe("RUNNING");
  expect(description.searchAttributes[SEARCH_ATTRIBUTE.organizationId]).toEqual([tenant.organizationId]);
  expect(description.searchAttributes[SEARCH_ATTRIBUTE.inboxId]).toEqual([id]);

  const worker = await app.startWorker();
  try {
    await handle.result();
    const row = await app.db.fork().findOneOrFail(Inbox, id);
    expect(row.status).toBe("deleted");
    expect((await tenant.request("DELETE", `/v1/inboxes/${id}`)).status).toBe(404);
    // The address stays taken: mail meant for the old owner never reaches a new one.
    const reuse = await tenant.request("POST", "/v1/inboxes", { body: { localPart: created.body.localPart, displayName: "D" } });
    expect(reuse.status).toBe(409);
  } finally {
    await worker.stop();
  }
});

test("the reconciler starts the purge of an inbox whose workflow start was lost", async () => {
  const tenant = await app.createTenant();
  const created = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("lost"), displayName: "L" } });
  const id: string = created.body.id;
  // As if the process died between the commit and the workflow start.
  await app.db.fork().nativeUpdate(Inbox, { id }, { status: "deleting" });

  const worker = await app.startWorker();
  try {
    // The reconciler reads every file's deleting inboxes on the run's shared database: only this one is started, or
    // it would start the purge of an inbox another file holds deleting on purpose (temporal-outage.test.ts).
    const purges = createInboxPurgeStarter(app.temporal, app.config.temporalTaskQueue, 10);
    const startedIds: string[] = [];
    await reconcile(
      purgeReconciler(app.db, {
        async start(inbox) {
          if (inbox.id !== id) return;
          startedIds.push(inbox.id);
          await purges.start(inbox);
        },
      }),
    );
    expect(startedIds).toEqual([id]);
    await eventually(async () => ((await app.db.fork().findOneOrFail(Inbox, id)).status === "deleted" ? true : undefined));
  } finally {
    await worker.stop();
  }
});

test("the purge removes a big mailbox in batches, with raw mail kept for it alone, and leaves others' mail", async () => {
  const tenant = await app.createTenant({ managedLimit: 5 });
  const make = async () => (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("big"), displayName: "B" } })).body.id as string;
  const [doomed, kept] = [await make(), await make()];
  for (let i = 0; i < 25; i++) {
    await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: doomed, attachments: [{ filename: "a.txt", content: "a", scanState: "clean" }] });
  }
  await storeInbound(app.db, { organizationId: tenant.organizationId, inboxId: kept });
  const raw = (inboxIds: string[]) => {
    const em = app.db.fork();
    const row = em.create(InboundRawMessage, {
      id: newUuid(), receivedAt: new Date(), mailFrom: "a@example.net", rcptTo: inboxIds.map(() => "x@agents.test"), inboxIds,
      remoteIp: "127.0.0.1", helo: "h", tlsProtocol: null, tlsCipher: null, size: 3, raw: Buffer.from("raw"),
      status: "failed", attempts: 5, error: "parse budget", processedAt: null,
    });
    return em.flush().then(() => row.id);
  };
  const alone = await raw([doomed]);
  const shared = await raw([doomed, kept]);

  expect((await tenant.request("DELETE", `/v1/inboxes/${doomed}`)).status).toBe(204);
  const worker = await app.startWorker();
  try {
    const result = await app.temporal.workflow.getHandle(inboxPurgeWorkflowId(doomed)).result();
    expect(result.deletedRows).toBe(25 + 25 + 25 + 1);
  } finally {
    await worker.stop();
  }
  const em = app.db.fork();
  expect(await em.count(Message, { inboxId: doomed })).toBe(0);
  expect(await em.count(Attachment, { inboxId: doomed })).toBe(0);
  expect(await em.count(Thread, { inboxId: doomed })).toBe(0);
  expect(await em.count(InboundRawMessage, { id: alone })).toBe(0);
  expect(await em.count(InboundRawMessage, { id: shared })).toBe(1);
  expect(await em.count(Message, { inboxId: kept })).toBe(1);
});
