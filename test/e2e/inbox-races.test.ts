// Races around deleting an inbox, run for real against PostgreSQL and Temporal: concurrent deletes, and sends
// whose transactions are still open when the delete comes. Invariants: exactly one delete succeeds, and nothing a
// send committed outlives the purge of its inbox.
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { openDatabase, type Database } from "../../src/db/database.js";
import { SEND_WINDOW_SHARDS } from "../../src/outbound/send-limits.js";
import { inboxPurgeWorkflowId } from "../../src/temporal/client.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";

let app: TestApp;
/** The test's own connections, apart from the app's pool, which held locks can drain. */
let observer: Database;
beforeAll(async () => {
  // Deliveries go to a closed port: they defer quietly while the purge removes their submissions.
  app = await startTestApp({ SMTP_ROUTES: "*=127.0.0.1:9" });
  observer = await openDatabase(inject("databaseUrl"), { poolMax: 3 });
});
afterAll(async () => {
  await app?.stop();
  await observer?.close();
});

const generous = { managedLimit: 1000, messagesPerMinute: 100_000, messagesPerDay: 100_000, recipientsPerDay: 100_000 };

async function createInbox(tenant: Tenant): Promise<string> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("race"), displayName: "R" } });
  expect(res.status).toBe(201);
  return res.body.id;
}

function send(tenant: Tenant, inboxId: string, text = "hello"): Promise<number> {
  return tenant
    .request("POST", `/v1/inboxes/${inboxId}/messages`, {
      body: { to: [{ email: "someone@example.com" }], subject: "race", text },
      headers: { "idempotency-key": uniqueName("race-key") },
    })
    .then((r) => r.status);
}

function deleteInbox(tenant: Tenant, inboxId: string): Promise<{ status: number; error?: string }> {
  return tenant.request("DELETE", `/v1/inboxes/${inboxId}`).then((r) => ({ status: r.status, error: r.body?.error }));
}

/** Rows of the inbox's mail still stored. */
async function leftovers(inboxId: string): Promise<{ messages: number; threads: number; submissions: number; recipients: number }> {
  const [row] = await observer.sql.query<{ messages: number; threads: number; submissions: number; recipients: number }>(
    `select (select count(*)::int from messages where inbox_id = $1) as messages,
            (select count(*)::int from threads where inbox_id = $1) as threads,
            (select count(*)::int from submissions where inbox_id = $1) as submissions,
            (select count(*)::int from submission_recipients r join submissions s on s.id = r.submission_id where s.inbox_id = $1) as recipients`,
    [inboxId],
  );
  return row!;
}

async function inboxStatus(inboxId: string): Promise<string> {
  const [row] = await observer.sql.query<{ status: string }>("select status from inboxes where id = $1", [inboxId]);
  return row!.status;
}

/**
 * Holds the organization's send counter rows of today (and tomorrow, should the day turn; every shard) in a transaction of its
 * own, so every send of the organization stops just before its commit, its rows written but not committed, as a
 * slow send would.
 */
async function holdSendCounter(organizationId: string): Promise<{ pid: number; release(): Promise<void> }> {
  const day = Math.floor(Date.now() / 86_400_000) * 86_400;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let pid!: number;
  const holding = new Promise<void>((resolve, reject) => {
    observer.sql
      .transaction(async (tx) => {
        pid = (await tx.query<{ pid: number }>("select pg_backend_pid() as pid"))[0]!.pid;
        await tx.query(
          `insert into send_windows (organization_id, kind, window_start, shard, messages, recipients)
           select $1, 'day', to_timestamp(d), shard, 0, 0 from unnest(array[$2::int8, $2::int8 + 86400]) as d, generate_series(0, $3 - 1) as shard
           on conflict do nothing`,
          [organizationId, day, SEND_WINDOW_SHARDS],
        );
        await tx.query("select 1 from send_windows where organization_id = $1 and kind = 'day' for update", [organizationId]);
        resolve();
        await released;
      })
      .catch(reject);
  });
  await holding;
  return {
    pid,
    async release() {
      release();
      await holding;
    },
  };
}

/** How many backends wait, directly or behind another waiter, for a lock held by `pid`. */
async function waitingOn(pid: number): Promise<number> {
  const [row] = await observer.sql.query<{ n: number }>(
    `with recursive blocked(pid) as (
       select a.pid from pg_stat_activity a where $1 = any(pg_blocking_pids(a.pid))
       union
       select a.pid from pg_stat_activity a join blocked b on b.pid = any(pg_blocking_pids(a.pid))
     ) select count(*)::int as n from blocked`,
    [pid],
  );
  return row!.n;
}

/** One delete answers 204; the others find it deleting (409), or purged already (404), as the README says. */
function expectOneWinner(answers: { status: number; error?: string }[]): void {
  expect(answers.filter((a) => a.status === 204)).toHaveLength(1);
  for (const a of answers.filter((a) => a.status !== 204)) {
    expect([{ status: 409, error: "inbox_delete_in_progress" }, { status: 404, error: "not_found" }]).toContainEqual(a);
  }
}

test("of concurrent deletes of one inbox exactly one answers 204, every other 409 inbox_delete_in_progress", async () => {
  const tenant = await app.createTenant(generous);
  const inboxes = await Promise.all(Array.from({ length: 20 }, () => createInbox(tenant)));
  // No worker polls this app's task queue yet: every purge is still running when the losers answer.
  const outcomes = await Promise.all(inboxes.map((id) => Promise.all([1, 2, 3].map(() => deleteInbox(tenant, id)))));
  for (const [i, answers] of outcomes.entries()) {
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses, inboxes[i]).toEqual([204, 409, 409]);
    expect(answers.filter((a) => a.status === 409).map((a) => a.error)).toEqual(["inbox_delete_in_progress", "inbox_delete_in_progress"]);
    expect(await inboxStatus(inboxes[i]!)).toBe("deleting");
  }
});

test("sends still committing when the inbox is deleted are purged with it: the delete waits for them", async () => {
  const worker = await app.startWorker();
  try {
    const tenant = await app.createTenant(generous);
    const inboxId = await createInbox(tenant);
    const hold = await holdSendCounter(tenant.organizationId);
    let sends: Promise<number>[] = [];
    let deletes: Promise<{ status: number; error?: string }>[] = [];
    try {
      // Five sends and three deletes waiting at once leave the app's pool of ten room for the requests' other work.
      sends = Array.from({ length: 5 }, () => send(tenant, inboxId));
      // Every send has written its message and submission and waits at the counter, uncommitted.
      await eventually(async () => ((await waitingOn(hold.pid)) === 5 ? true : undefined));
      deletes = [1, 2, 3].map(() => deleteInbox(tenant, inboxId));
      // Either the deletes wait for the sends (the fix), or they went ahead and the purge already ran (the race).
      await eventually(async () => ((await waitingOn(hold.pid)) > 5 || (await inboxStatus(inboxId)) === "deleted" ? true : undefined));
    } finally {
      await hold.release();
    }
    expect(await Promise.all(sends)).toEqual(Array(5).fill(202));
    expectOneWinner(await Promise.all(deletes));
    await app.temporal.workflow.getHandle(inboxPurgeWorkflowId(inboxId)).result();
    expect(await inboxStatus(inboxId)).toBe("deleted");
    expect(await leftovers(inboxId)).toEqual({ messages: 0, threads: 0, submissions: 0, recipients: 0 });
  } finally {
    await worker.stop();
  }
});

test("many sends racing deletes: exactly one delete wins and no accepted send outlives the purge", async () => {
  const worker = await app.startWorker();
  try {
    const tenant = await app.createTenant(generous);
    for (let round = 0; round < 10; round++) {
      const inboxId = await createInbox(tenant);
      const text = "x".repeat(256 * 1024);
      const sends = Array.from({ length: 6 }, () => send(tenant, inboxId, text));
      const deletes = [deleteInbox(tenant, inboxId), deleteInbox(tenant, inboxId)];
      const sent = await Promise.all(sends);
      const deleted = await Promise.all(deletes);
      // A send answered before the inbox was marked deleting is 202 and purged; one after it is 404.
      for (const status of sent) expect([202, 404]).toContain(status);
      expectOneWinner(deleted);
      await app.temporal.workflow.getHandle(inboxPurgeWorkflowId(inboxId)).result();
      expect(await leftovers(inboxId), `round ${round}`).toEqual({ messages: 0, threads: 0, submissions: 0, recipients: 0 });
    }
  } finally {
    await worker.stop();
  }
});
