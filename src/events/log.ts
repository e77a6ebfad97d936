// The event log: every event is a row of `events`, written in the transaction that stores what it announces, and
// announced on the EVENTS_CHANNEL notification channel when that transaction commits, so waits and streams of every
// API process wake at once (PostgreSQL LISTEN/NOTIFY, src/events/hub.ts). Streams read the log after a position and
// resume from it, for organizations with webhook endpoints or without; the worker prunes it after EVENT_RETENTION.
//
// Positions (`seq`) follow commit order within an organization: an append first takes the organization's advisory
// lock, held until its commit, so an organization's appends take turns and a position another transaction can still
// commit is never below one a reader has seen. A reader that read up to a position has missed nothing before it.
import type { SqlTx } from "../db/database.js";
import type { InsertPart } from "../db/tables/columns.js";
import { eventsInsert } from "../db/tables/events.js";
import type { NewEvent } from "./event.js";

/**
 * The notification channel; a notification's payload is "<organizationId> <inboxId> <messageId> <a|->", with "-"
 * for an id the event does not have (a submission.held of /v1/send), the last word saying whether the message's
 * sender authenticated ("-" too for an event not about an inbound sender).
 */
export const EVENTS_CHANNEL = "mailbox_events";

/** What a notification tells: an event of this organization (about a message of this inbox) was committed. */
export interface EventNotice {
  readonly organizationId: string;
  readonly inboxId: string | null;
  readonly messageId: string | null;
  /** Whether the message's sender authenticated; undefined when the notice does not say (a process not upgraded yet). */
  readonly senderAuthenticated: boolean | undefined;
}

export function noticeOf(payload: string): EventNotice | undefined {
  const [organizationId, inboxId, messageId, authenticated] = payload.split(" ");
  if (!organizationId || !inboxId || !messageId) return undefined;
  return {
    organizationId,
    inboxId: inboxId === NONE ? null : inboxId,
    messageId: messageId === NONE ? null : messageId,
    senderAuthenticated: authenticated === undefined ? undefined : authenticated === "a",
  };
}

/** A notice's place holder for an id the event does not have. */
const NONE = "-";

/**
 * Appends events in the caller's transaction, and announces them at its commit, in one statement with `with` (other
 * writes of the transaction, such as the webhook outbox's rows: one round trip fewer each). Call it last in the
 * transaction: the organizations' locks it takes are held until the commit, and nothing after it should wait while
 * holding them.
 */
export async function appendEvents(tx: SqlTx, events: readonly NewEvent[], with_: readonly InsertPart[] = []): Promise<void> {
  if (events.length === 0) return;
  const params: unknown[] = [];
  const bind = (value: unknown) => `$${params.push(value)}`;
  const rows = events.map((e) => ({
    id: e.eventId,
    organizationId: e.organizationId,
    inboxId: e.inboxId,
    type: e.type,
    payload: e.body,
    senderAuthenticated: e.senderAuthenticated,
    createdAt: e.createdAt,
  }));
  // One organization after another in one order, so two appenders never wait on each other in a circle. The locks
  // are all taken before the first row gets its position: the insert reads the rows through a join with their
  // count, which ends only once every lock is held.
  const locked = `select count(pg_advisory_xact_lock(hashtextextended('events ' || o, 0))) as locks
                    from (select distinct o from unnest(${bind(events.map((e) => e.organizationId))}::text[]) as o order by o) as organizations`;
  const others = with_.map((part, i) => `w${i} as (${part(bind)}), `).join("");
  const appended = eventsInsert(rows, "locked")(bind);
  await tx.query(
    `with locked as materialized (${locked}), ${others}appended as (${appended} returning organization_id, inbox_id, id, sender_authenticated)
     select count(pg_notify(${bind(EVENTS_CHANNEL)},
              a.organization_id || ' ' || coalesce(a.inbox_id, '${NONE}') || ' ' || coalesce(n.message_id, '${NONE}')
                || case when a.sender_authenticated then ' a' else ' -' end))
       from appended a join unnest(${bind(events.map((e) => e.eventId))}::text[], ${bind(events.map((e) => e.messageId))}::text[]) as n(id, message_id)
         on n.id = a.id`,
    params,
    // One text per kind of `with_` part (the rows go as arrays): parsed and planned once per connection.
    { prepared: true },
  );
}

/** An event as read from the log. */
export interface LoggedEvent {
  /** Its position; int8 arrives as a string. */
  readonly seq: string;
  readonly id: string;
  readonly payload: string;
  /** Whether the message's sender authenticated; null for events stored before sender authentication. */
  readonly sender_authenticated: boolean | null;
  readonly created_at: Date;
}

type Statement = { readonly text: string; readonly values: readonly unknown[] };

/** Which events a reader sees: all of its organization's, or those of some inboxes. */
export type InboxFilter = readonly string[] | null;

function inboxCondition(inboxes: InboxFilter, values: unknown[]): string {
  if (inboxes === null) return "";
  values.push([...inboxes]);
  return `and inbox_id = any($${values.length})`;
}

/** The position and time of one event the reader may see; none when it is not (or no longer) in the log. */
export function eventPositionStatement(organizationId: string, eventId: string, inboxes: InboxFilter): Statement {
  const values: unknown[] = [organizationId, eventId];
  return {
    text: `select seq, created_at from events where organization_id = $1 and id = $2 ${inboxCondition(inboxes, values)}`,
    values,
  };
}

/** The organization's latest position (0 for an empty log): a stream that starts now reads after it. */
export function latestPositionStatement(organizationId: string): Statement {
  return { text: `select coalesce(max(seq), 0)::text as seq from events where organization_id = $1`, values: [organizationId] };
}

/** Up to `limit` events after position `after`, in log order; only those of authenticated senders when asked. */
export function eventsAfterStatement(organizationId: string, inboxes: InboxFilter, after: string, limit: number, senderAuthenticated = false): Statement {
  const values: unknown[] = [organizationId, after, limit];
  return {
    text: `select seq::text, id, payload, sender_authenticated, created_at from events
            where organization_id = $1 and seq > $2::int8 ${inboxCondition(inboxes, values)} ${senderAuthenticated ? "and sender_authenticated" : ""}
            order by seq limit $3`,
    values,
  };
}

/** Statements per pruning round at most: a larger backlog goes in the rounds after. */
const MAX_PRUNE_BATCHES = 100;

/**
 * Deletes the events older than the retention, in statements of at most `batchSize` rows (the worker's periodic
 * job); answers how many went.
 */
export async function pruneEventLog(sql: SqlTx, retentionMs: number, options: { now?: Date; batchSize?: number } = {}): Promise<number> {
  const before = new Date((options.now ?? new Date()).getTime() - retentionMs);
  const batchSize = options.batchSize ?? 1000;
  let pruned = 0;
  for (let batch = 0; batch < MAX_PRUNE_BATCHES; batch++) {
    const [row] = await sql.query<{ n: number }>(
      `with gone as (
         delete from events where id = any(array(select id from events where created_at < $1 order by created_at limit $2))
         returning 1)
       select count(*)::int as n from gone`,
      [before, batchSize],
    );
    pruned += row!.n;
    if (row!.n < batchSize) break;
  }
  return pruned;
}
