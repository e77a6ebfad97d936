// Inbound processing stores parsed messages in batches, one transaction each, on the real PostgreSQL: batches form
// while a store runs, a reply joins a parent of its own batch, a message the database refuses fails alone, and two
// processors racing over the same raw rows store each message once.
//
// A batch is made deterministic by holding a lock: a test transaction holds an inbox FOR UPDATE, so the store of a
// message to that inbox waits at its FOR SHARE, and whatever is parsed meanwhile forms the next batch.
import { afterAll, beforeAll, expect, test } from "vitest";
import { newId } from "../../src/ids.js";
import { createInboundProcessor, type InboundProcessor } from "../../src/inbound/processor.js";
import { createRawMessageStore, type RawMessageStore, type ReceivedMessage } from "../../src/inbound/receive.js";
import { createLogger } from "../../src/logger.js";
import { createEmailParser, type EmailParser, type ParsedEmail } from "../../src/mail/parse.js";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { recordingPorts, type RecordingPorts } from "../support/inbound-ports.js";
import { holdInbox } from "../support/hold-inbox.js";

let app: TestApp;
let tenant: Tenant;
let parser: EmailParser;
let rawMessages: RawMessageStore;
const processors: InboundProcessor[] = [];

beforeAll(async () => {
  app = await startTestApp();
  tenant = await app.createTenant({ managedLimit: 50 });
  rawMessages = createRawMessageStore(app.db);
  parser = createEmailParser({
    timeoutMs: app.config.inbound.parseTimeoutMs,
    memoryMb: app.config.inbound.parseMemoryMb,
    workers: 2,
    maxHeaderBytes: app.config.smtp.maxHeaderBytes,
    maxMimeParts: app.config.smtp.maxMimeParts,
  });
});
afterAll(async () => {
  await Promise.all(processors.map((p) => p.stop()));
  await parser?.close();
  await app?.stop();
});

interface Inbox {
  readonly id: string;
  readonly address: string;
}

async function createInbox(): Promise<Inbox> {
  const res = await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("batch"), displayName: "Batch" } });
  expect(res.status).toBe(201);
  return res.body;
}

/**
 * A processor as the smtp role builds it, counting the parses handed to it so a test knows what is ready to store;
 * `parsed` may hold a parse's result back before the processor sees it.
 */
function startProcessor(options: { ports?: RecordingPorts; logs?: string[]; parsed?: (email: ParsedEmail) => Promise<ParsedEmail> } = {}) {
  const ports = options.ports ?? recordingPorts();
  let parsed = 0;
  const processor = createInboundProcessor({
    db: app.db,
    parser: {
      parse: (raw) =>
        parser
          .parse(raw)
          .then((email) => options.parsed?.(email) ?? email)
          .finally(() => parsed++),
      close: async () => undefined,
    },
    outbox: ports.outbox,
    scans: ports.scans,
    log: options.logs ? createLogger("warn", (line) => options.logs!.push(line)) : createLogger("error"),
    hostname: "mx.agents.test",
    concurrency: 8,
    memoryBytes: app.config.inbound.processingMemoryBytes,
    maxQueued: app.config.inbound.maxBacklogMessages,
  });
  processors.push(processor);
  return { processor, ports, parsedCount: () => parsed };
}

interface Mail {
  readonly messageId: string;
  readonly inReplyTo?: string;
  /** The References header of a reply (else In-Reply-To's). */
  readonly references?: readonly string[];
  /** The From header; null leaves it out. */
  readonly from?: string | null;
  readonly subject?: string;
}

/** Commits a raw message for the inboxes as the SMTP side does; returns its raw id and what was committed. */
interface Received {
  readonly rawId: string;
  readonly received: ReceivedMessage;
}

async function receive(inboxes: readonly Inbox[], mail: Mail): Promise<Received> {
  const headers = [
    ...(mail.from === null ? [] : [`From: ${mail.from ?? "sender@example.org"}`]),
    `To: ${inboxes.map((i) => i.address).join(", ")}`,
    `Subject: ${mail.subject ?? "batch"}`,
    `Message-ID: ${mail.messageId}`,
    ...(mail.inReplyTo ? [`In-Reply-To: ${mail.inReplyTo}`, `References: ${(mail.references ?? [mail.inReplyTo]).join(" ")}`] : []),
  ];
  const received: ReceivedMessage = {
    mailFrom: "sender@example.org",
    recipients: inboxes.map((i) => ({ address: i.address, inboxId: i.id })),
    session: { remoteIp: "192.0.2.7", helo: "mx.example.org", tls: null },
    raw: Buffer.from(`${headers.join("\r\n")}\r\n\r\nbody of ${mail.messageId}\r\n`),
  };
  return { rawId: await rawMessages.store(received), received };
}

const messageId = () => `<${uniqueName("m")}@example.org>`;

/**
 * Starts a store that waits on a held inbox, so what is submitted next forms batches while it waits; resolves
 * once that store is under way. Release the hold to let it (and the batch waiting behind it) commit.
 */
async function blockStoring(started: ReturnType<typeof startProcessor>) {
  const blocked = await createInbox();
  const hold = await holdInbox(app.db, blocked.id);
  try {
    const blocker = await receive([blocked], { messageId: messageId() });
    const before = started.parsedCount();
    started.processor.submit(blocker.rawId, blocker.received.raw.length, blocker.received);
    await waitParsed(started, before + 1);
    return hold;
  } catch (error) {
    await hold.release();
    throw error;
  }
}

/**
 * Waits until `count` parses were handed to the processor: each is among the ready ones by then, its continuation
 * to there being microtasks that run before any timer or I/O callback, as this poll is.
 */
async function waitParsed(started: ReturnType<typeof startProcessor>, count: number): Promise<void> {
  await eventually(async () => (started.parsedCount() >= count ? true : undefined));
}

/**
 * Submits the messages while a store is held, waits until they are parsed and ready together, and runs `held`;
 * then releases the hold (also when anything failed, or the held store would keep the processors from stopping),
 * which lets the held store commit and these go as the next batch.
 */
async function whileStoringHeld(started: ReturnType<typeof startProcessor>, messages: readonly Received[], held?: () => Promise<unknown>) {
  const hold = await blockStoring(started);
  try {
    const parsedBefore = started.parsedCount();
    for (const r of messages) started.processor.submit(r.rawId, r.received.raw.length, r.received);
    await waitParsed(started, parsedBefore + messages.length);
    await held?.();
  } finally {
    await hold.release();
  }
}

async function rawRowsLeft(rawIds: readonly string[]): Promise<number> {
  const [{ n }] = await app.db.sql.query<{ n: number }>(
    `select count(*)::int as n from inbound_raw_messages where id = any($1) and status = 'pending'`,
    [rawIds],
  );
  return n;
}

async function waitStored(rawIds: readonly string[]): Promise<void> {
  await eventually(async () => ((await rawRowsLeft(rawIds)) === 0 ? true : undefined));
}

interface StoredRow {
  readonly id: string;
  readonly raw_id: string;
  readonly thread_id: string;
  readonly internet_message_id: string;
  readonly references: string[];
  readonly created_at: Date;
  /** The transaction that inserted the row: rows of one store transaction share it. */
  readonly xmin: string;
}

async function storedIn(inbox: Inbox): Promise<StoredRow[]> {
  return app.db.sql.query<StoredRow>(
    `select id, raw_id, thread_id, internet_message_id, "references", created_at, xmin::text as xmin from messages
      where inbox_id = $1 order by created_at, id`,
    [inbox.id],
  );
}

async function thread(id: string) {
  const [row] = await app.db.sql.query<{ subject: string; participants: string[]; message_count: number; last_message_at: Date }>(
    `select subject, participants, message_count, last_message_at from threads where id = $1`,
    [id],
  );
  return row;
}

test("stores many messages submitted at once in a few transactions of at most 64, and every one of them", async () => {
  const started = startProcessor();
  const inbox = await createInbox();
  const received = [];
  for (let i = 0; i < 100; i++) received.push(await receive([inbox], { messageId: messageId() }));

  // 64 ready make a full batch, which is stored beside the waiting one; the 36 parsed after it wait their turn.
  await whileStoringHeld(started, received, () => eventually(async () => ((await storedIn(inbox)).length === 64 ? true : undefined)));
  await waitStored(received.map((r) => r.rawId));

  const stored = await storedIn(inbox);
  expect(stored.map((m) => m.raw_id).sort()).toEqual(received.map((r) => r.rawId).sort());
  const transactions = new Map<string, StoredRow[]>();
  for (const m of stored) transactions.set(m.xmin, [...(transactions.get(m.xmin) ?? []), m]);
  expect([...transactions.values()].map((rows) => rows.length).sort((a, b) => a - b)).toEqual([36, 64]);
  // Parses finish in any order; inside a batch, messages are stored in the order they were submitted.
  const arrival = new Map(received.map((r, i) => [r.rawId, i]));
  for (const rows of transactions.values()) {
    const order = rows.map((m) => arrival.get(m.raw_id)!);
    expect(order).toEqual([...order].sort((a, b) => a - b));
  }
  // Every event is enqueued once, and logged inside its batch's transaction (the outbox's rows ride the same statement).
  const events = started.ports.enqueued.filter((e) => e.inboxId === inbox.id);
  expect(events).toHaveLength(100);
  const [{ n }] = await app.db.sql.query<{ n: number }>(`select count(*)::int as n from events where inbox_id = $1 and xmin::text = any($2::text[])`, [
    inbox.id,
    [...transactions.keys()],
  ]);
  expect(n).toBe(100);
});

test("a message stored alone at low load is not held back, and a batch of one commits at once", async () => {
  const started = startProcessor();
  const inbox = await createInbox();
  const one = await receive([inbox], { messageId: messageId() });
  started.processor.submit(one.rawId, one.received.raw.length, one.received);
  await waitStored([one.rawId]);
  const two = await receive([inbox], { messageId: messageId() });
  started.processor.submit(two.rawId, two.received.raw.length);
  await waitStored([two.rawId]);
  const stored = await storedIn(inbox);
  expect(stored).toHaveLength(2);
  expect(new Set(stored.map((m) => m.xmin)).size).toBe(2);
});

test("messages parsed at once while no store runs go in one batch: the first ready does not start a batch alone", async () => {
  const count = 6;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  // Every parse is held until all are done, then all end in the same turn, one continuation after another.
  let held = 0;
  const started = startProcessor({
    parsed: async (email) => {
      if (++held === count) release();
      await released;
      return email;
    },
  });
  const inbox = await createInbox();
  const received = [];
  for (let i = 0; i < count; i++) received.push(await receive([inbox], { messageId: messageId() }));
  for (const r of received) started.processor.submit(r.rawId, r.received.raw.length, r.received);
  await waitStored(received.map((r) => r.rawId));
  const stored = await storedIn(inbox);
  expect(stored).toHaveLength(count);
  expect(new Set(stored.map((m) => m.xmin)).size).toBe(1);
});

test("a ready message waits for a slow parse a few milliseconds at most, not until it ends", async () => {
  let releaseSlow!: () => void;
  const slowReleased = new Promise<void>((r) => (releaseSlow = r));
  const slowId = messageId();
  const started = startProcessor({ parsed: async (email) => (email.messageId === slowId ? slowReleased.then(() => email) : email) });
  const inbox = await createInbox();
  const slow = await receive([inbox], { messageId: slowId });
  const quick = await receive([inbox], { messageId: messageId() });
  started.processor.submit(slow.rawId, slow.received.raw.length, slow.received);
  started.processor.submit(quick.rawId, quick.received.raw.length, quick.received);
  // Stored while the other is still being prepared (its parse is held until then).
  await waitStored([quick.rawId]);
  expect(await rawRowsLeft([slow.rawId])).toBe(1);
  releaseSlow();
  await waitStored([slow.rawId]);
  expect(await storedIn(inbox)).toHaveLength(2);
});

test("a reply and its parent in the same batch share one thread, and later replies find it in the database", async () => {
  const started = startProcessor();
  const inbox = await createInbox();
  const other = await createInbox();
  const parentId = messageId();
  const replyId = messageId();
  const batch = [
    await receive([inbox], { messageId: parentId, from: "alice@example.org", subject: "Plans" }),
    await receive([inbox], { messageId: replyId, inReplyTo: parentId, from: "bob@example.org", subject: "Re: Plans" }),
    // The same Message-ID answered in another inbox: threads never cross inboxes.
    await receive([other], { messageId: messageId(), inReplyTo: parentId, from: "carol@example.org" }),
    await receive([inbox], { messageId: messageId(), inReplyTo: replyId, from: "Carol@Example.org", subject: "Re: Re: Plans" }),
  ];

  await whileStoringHeld(started, batch);
  await waitStored(batch.map((r) => r.rawId));

  const stored = await storedIn(inbox);
  expect(new Set(stored.map((m) => m.xmin)).size).toBe(1);
  expect(stored.map((m) => m.raw_id)).toEqual([batch[0]!.rawId, batch[1]!.rawId, batch[3]!.rawId]);
  // Each row its own References, of lengths 0, 1 and 1 in one statement (array columns go as one flat array).
  expect(stored.map((m) => m.references)).toEqual([[], [parentId], [replyId]]);
  expect(new Set(stored.map((m) => m.thread_id)).size).toBe(1);
  expect(await thread(stored[0]!.thread_id)).toEqual({
    subject: "Plans",
    participants: ["alice@example.org", inbox.address, "bob@example.org", "carol@example.org"],
    message_count: 3,
    last_message_at: stored[2]!.created_at,
  });
  const [elsewhere] = await storedIn(other);
  expect(elsewhere!.thread_id).not.toBe(stored[0]!.thread_id);
  expect((await thread(elsewhere!.thread_id))!.message_count).toBe(1);

  // Two replies to the stored thread in one batch: found in the database, locked, and the summary folded over both.
  const later = [
    await receive([inbox], { messageId: messageId(), inReplyTo: parentId, from: "dave@example.org" }),
    await receive([inbox], { messageId: messageId(), inReplyTo: replyId, from: "erin@example.org", references: [parentId, replyId] }),
  ];
  await whileStoringHeld(started, later);
  await waitStored(later.map((r) => r.rawId));

  const all = await storedIn(inbox);
  expect(all).toHaveLength(5);
  expect(new Set(all.map((m) => m.thread_id)).size).toBe(1);
  expect(new Set(all.slice(3).map((m) => m.xmin)).size).toBe(1);
  expect(all.slice(3).map((m) => m.references)).toEqual([[parentId], [parentId, replyId]]);
  expect(await thread(all[0]!.thread_id)).toMatchObject({
    subject: "Plans",
    participants: ["alice@example.org", inbox.address, "bob@example.org", "carol@example.org", "dave@example.org", "erin@example.org"],
    message_count: 5,
    last_message_at: all[4]!.created_at,
  });
});

test("a message without a From header is stored with its envelope sender, and its thread counts that sender", async () => {
  const started = startProcessor();
  const inbox = await createInbox();
  const fromless = await receive([inbox], { messageId: messageId(), from: null, subject: "No From" });
  started.processor.submit(fromless.rawId, fromless.received.raw.length, fromless.received);
  await waitStored([fromless.rawId]);

  const [stored] = await storedIn(inbox);
  const [row] = await app.db.sql.query<{ from: unknown }>(`select "from" from messages where id = $1`, [stored!.id]);
  expect(row!.from).toEqual({ email: fromless.received.mailFrom });
  expect(await thread(stored!.thread_id)).toMatchObject({ subject: "No From", participants: [fromless.received.mailFrom, inbox.address], message_count: 1 });
});

test("a message the database refuses fails alone: the rest of its batch is stored", async () => {
  const logs: string[] = [];
  const started = startProcessor({ logs });
  const inbox = await createInbox();
  const batch = [];
  for (let i = 0; i < 5; i++) batch.push(await receive([inbox], { messageId: messageId() }));
  const poisoned = batch[2]!;
  // A copy of it is in the inbox already, so storing it violates messages_raw_id_inbox_id_unique.
  const now = new Date();
  await app.db.sql.query(
    `insert into messages (id, organization_id, inbox_id, thread_id, direction, internet_message_id, "references", "from", "to",
       subject, text, metadata, delivery_status, raw_id, created_at, updated_at)
     values ($1, $2, $3, 'thr_000000000000000000000000', 'inbound', '<x@example.org>', '{}', '{}', '[]', '', '', '{}', 'received',
       $4, $5, $5)`,
    [newId("msg"), tenant.organizationId, inbox.id, poisoned.rawId, now],
  );

  await whileStoringHeld(started, batch);
  const healthy = batch.filter((r) => r !== poisoned).map((r) => r.rawId);
  await waitStored(healthy);

  const stored = await storedIn(inbox);
  expect(stored.filter((m) => m.raw_id !== poisoned.rawId).map((m) => m.raw_id).sort()).toEqual([...healthy].sort());
  // The batch failed as a whole, then each message was stored on its own.
  expect(new Set(stored.filter((m) => m.raw_id !== poisoned.rawId).map((m) => m.xmin)).size).toBe(4);
  expect(logs.some((l) => l.includes("inbound batch failed"))).toBe(true);
  // The poisoned one counts a failed attempt and stays pending for the sweeper.
  const [raw] = await app.db.sql.query<{ status: string; attempts: number; error: string }>(
    `select status, attempts, error from inbound_raw_messages where id = $1`,
    [poisoned.rawId],
  );
  expect(raw).toMatchObject({ status: "pending", attempts: 1, error: expect.stringMatching(/messages_raw_id_inbox_id_unique/) });
});

test("two processors racing over the same raw messages store each once, with consistent thread summaries", async () => {
  const first = startProcessor();
  const second = startProcessor();
  const inboxes = [await createInbox(), await createInbox()];
  const received = [];
  let previous: string | undefined;
  for (let i = 0; i < 40; i++) {
    // A chain of replies, each to the one before, and half of the messages to both inboxes.
    const id = messageId();
    received.push(await receive(i % 2 === 0 ? inboxes : [inboxes[0]!], { messageId: id, inReplyTo: previous }));
    previous = id;
  }
  for (const r of received) {
    first.processor.submit(r.rawId, r.received.raw.length, r.received);
    // The second has ids only, like a sweeper that found the rows pending.
    second.processor.submit(r.rawId, r.received.raw.length);
  }
  await waitStored(received.map((r) => r.rawId));
  // Parses still under way in one of them find the rows gone or claimed and store nothing.
  await Promise.all([first.processor.stop(), second.processor.stop()]);

  for (const [n, inbox] of inboxes.entries()) {
    const stored = await storedIn(inbox);
    const expected = received.filter((_, i) => n === 0 || i % 2 === 0).map((r) => r.rawId);
    expect(stored.map((m) => m.raw_id).sort()).toEqual([...expected].sort());
    const [{ messages }] = await app.db.sql.query<{ messages: number }>(
      `select coalesce(sum(message_count), 0)::int as messages from threads where inbox_id = $1`,
      [inbox.id],
    );
    expect(messages).toBe(expected.length);
  }
  const events = [...first.ports.enqueued, ...second.ports.enqueued].filter((e) => inboxes.some((i) => i.id === e.inboxId));
  expect(events).toHaveLength(60);
  expect(new Set(events.map((e) => e.messageId)).size).toBe(60);
});

test("a message to more inboxes than one statement writes (1,001 copies) is stored whole, a statement per table", async () => {
  // Past COPIES_PER_STATEMENT (src/inbound/store.ts) a batch writes its threads, messages, contacts and raw row with
  // a statement per table instead of the one combined statement; the copies span two organizations, as a message to
  // many customers' inboxes would.
  const tenants = [tenant, await app.createTenant({ managedLimit: 600 }), await app.createTenant({ managedLimit: 600 })];
  const inboxes: Inbox[] = [];
  for (const owner of tenants.slice(1)) {
    for (let made = 0; made < 501; made += 25) {
      const created = await Promise.all(
        Array.from({ length: Math.min(25, 501 - made) }, async () => {
          const res = await owner.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("many"), displayName: "Many" } });
          expect(res.status, JSON.stringify(res.body)).toBe(201);
          return res.body as Inbox;
        }),
      );
      inboxes.push(...created);
    }
  }
  const copies = inboxes.slice(0, 1001);
  expect(copies).toHaveLength(1001);
  const started = startProcessor();
  const id = messageId();
  const mail = await receive(copies, { messageId: id, subject: "to a thousand and one" });
  started.processor.submit(mail.rawId, mail.received.raw.length, mail.received);
  await waitStored([mail.rawId]);

  const [stored] = await app.db.sql.query<{ messages: number; inboxes: number; threads: number; summed: number }>(
    `select count(*)::int as messages, count(distinct m.inbox_id)::int as inboxes, count(distinct m.thread_id)::int as threads,
            (select coalesce(sum(t.message_count), 0)::int from threads t where t.id in (select thread_id from messages where raw_id = $1)) as summed
       from messages m where m.raw_id = $1`,
    [mail.rawId],
  );
  expect(stored).toEqual({ messages: 1001, inboxes: 1001, threads: 1001, summed: 1001 });
  const [{ left }] = await app.db.sql.query<{ left: number }>(`select count(*)::int as left from inbound_raw_messages where id = $1`, [mail.rawId]);
  expect(left).toBe(0);
  expect(started.ports.enqueued.filter((e) => copies.some((i) => i.id === e.inboxId))).toHaveLength(1001);
}, 120_000);
