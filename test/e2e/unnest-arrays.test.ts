// Rows bound as one array per column (src/db/tables/columns.ts unnestInsert): the statement's text and parameters
// are the same whatever the number of rows (so the inbound store prepares its write once per connection), and a
// text[] column's arrays, which travel as one array literal a row, come back exactly as given — quotes, backslashes,
// braces, commas, a "NULL" string, an empty array, arrays of different lengths.
import { inject } from "vitest";
import { afterAll, beforeAll, expect, test } from "vitest";
import { openDatabase, type Database } from "../../src/db/database.js";
import { insertTogether, type InsertPart } from "../../src/db/tables/columns.js";
import { messagesInsert, type MessageInsert } from "../../src/db/tables/messages.js";
import { threadsInsert, threadSummariesUpdate, type ThreadInsert } from "../../src/db/tables/threads.js";
import { newId, newUuid } from "../../src/ids.js";

let db: Database;
beforeAll(async () => {
  db = await openDatabase(inject("databaseUrl"), { poolMax: 2 });
});
afterAll(() => db?.close());

const HOSTILE: readonly (readonly string[])[] = [
  [`<a"b@x>`, `<c\\d@x>`, `<{e},f@x>`, "NULL", "", `<"\\"@x>`],
  [],
  ["<ünï©ødé@x>", " spaced ", `\\`, `"`, "{", "}", ","],
];

async function organization(): Promise<string> {
  const id = newUuid();
  await db.sql.query(
    `insert into organizations (id, name, messages_per_minute, messages_per_day, recipients_per_day, managed_limit, created_at, updated_at)
     values ($1, 'unnest arrays', 1, 1, 1, 1, now(), now())`,
    [id],
  );
  return id;
}

function thread(organizationId: string, participants: readonly string[], at: Date): ThreadInsert {
  return { id: newId("thr"), organizationId, inboxId: newId("inb"), subject: "s", participants, messageCount: 1, lastMessageAt: at, createdAt: at, updatedAt: at };
}

function message(t: ThreadInsert, references: readonly string[]): MessageInsert {
  return {
    id: newId("msg"),
    organizationId: t.organizationId,
    inboxId: t.inboxId,
    threadId: t.id,
    direction: "inbound",
    internetMessageId: `<${newUuid()}@x>`,
    inReplyTo: references[0] ?? null,
    references,
    from: { email: "a@x", name: `"quoted" \\ name` },
    to: [],
    cc: [],
    replyTo: null,
    subject: `subject with "quotes" and \\`,
    text: "text",
    html: null,
    metadata: { k: "v" },
    deliveryStatus: "received",
    submissionId: null,
    failureCode: null,
    inboundSecurity: null,
    attachmentsScanState: "clean",
    rawId: newUuid(),
    parseProblem: null,
    extracted: null,
    senderAuthenticated: null,
    senderBlocked: false,
    createdAt: t.createdAt,
    updatedAt: t.createdAt,
  };
}

/** The text and parameter count a part renders to. */
function rendered(parts: readonly InsertPart[]): { text: string; parameters: number } {
  let parameters = 0;
  const text = parts.map((part) => part(() => `$${++parameters}`)).join("; ");
  return { text, parameters };
}

test("text[] columns bound as array literals come back as given, rows in order, and a summary update keeps them too", async () => {
  const organizationId = await organization();
  const at = new Date("2026-11-27T06:00:00.123Z");
  const threads = HOSTILE.map((participants, i) => thread(organizationId, participants, new Date(at.getTime() + i)));
  const messages = threads.map((t, i) => message(t, HOSTILE[(i + 1) % HOSTILE.length]!));
  await db.sql.transaction((tx) => insertTogether(tx, [...threadsInsert(threads), ...messagesInsert(messages)], { prepared: true }), { genericPlans: true });

  const storedThreads = await db.sql.query<{ id: string; participants: string[]; last_message_at: Date }>(
    `select id, participants, last_message_at from threads where organization_id = $1 order by last_message_at`,
    [organizationId],
  );
  expect(storedThreads.map((t) => [t.id, t.participants, t.last_message_at.getTime()])).toEqual(threads.map((t) => [t.id, [...t.participants], t.lastMessageAt.getTime()]));
  const storedMessages = await db.sql.query<{ id: string; references: string[]; from: unknown; subject: string; in_reply_to: string | null }>(
    `select id, "references", "from", subject, in_reply_to from messages where organization_id = $1 order by created_at`,
    [organizationId],
  );
  expect(storedMessages).toEqual(messages.map((m) => ({ id: m.id, references: [...m.references], from: m.from, subject: m.subject, in_reply_to: m.inReplyTo })));

  // The summaries turned around: each thread takes the next one's participants.
  const summaries = threads.map((t, i) => ({
    id: t.id,
    organizationId,
    subject: t.subject,
    participants: HOSTILE[(i + 1) % HOSTILE.length]!,
    messageCount: 2,
    lastMessageAt: new Date(t.lastMessageAt.getTime() + 1000),
    updatedAt: new Date(t.lastMessageAt.getTime() + 1000),
  }));
  await db.sql.transaction((tx) => insertTogether(tx, threadSummariesUpdate(summaries), { prepared: true }), { genericPlans: true });
  const updated = await db.sql.query<{ id: string; participants: string[]; message_count: number }>(
    `select id, participants, message_count from threads where organization_id = $1 order by last_message_at`,
    [organizationId],
  );
  expect(updated).toEqual(summaries.map((s) => ({ id: s.id, participants: [...s.participants], message_count: 2 })));
});

test("one text and one parameter per column whatever the number of rows", () => {
  const organizationId = newUuid();
  const at = new Date();
  const batch = (n: number) => {
    const threads = Array.from({ length: n }, () => thread(organizationId, ["a@x"], at));
    return [...threadsInsert(threads), ...messagesInsert(threads.map((t) => message(t, ["<r@x>"])))];
  };
  const one = rendered(batch(1));
  const many = rendered(batch(40));
  expect(many).toEqual(one);
  // threads' 10 columns and messages' 28.
  expect(one.parameters).toBe(38);
});
