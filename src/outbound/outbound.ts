// Outbound acceptance: inbox send, reply and /v1/send. Each validates once (addresses, recipient policy, size),
// refuses while delivery is backlogged, composes the message, then in one transaction holds the sending inbox (a
// delete waits for the send), claims the idempotency key, stores the mailbox message (not for /v1/send), the
// submission with its composed bytes and its recipients (the rows of src/db/tables), and counts the send against
// the organization's limits. After the commit the delivery workers are told (DeliveryQueue.announce); no Temporal
// call holds up the answer. The transaction is plain SQL with bound parameters (TenantStore.sqlTransaction):
// through the ORM the composed message travelled inlined as hex in the statement text, the largest CPU cost of
// acceptance (bench:outbound's profile). Each route is a function of its dependencies (OutboundDeps, built once by
// the composition root), the tenant's store and the caller.
import type { Principal } from "../auth/principal.js";
import { canAccessInbox, requireUnrestrictedInboxes } from "../auth/principal.js";
import { Message, Submission, SubmissionRecipient, Thread } from "../db/entities/index.js";
import type { InboxRow } from "../db/entities/inbox.js";
import type { MessageRow, StoredAddress } from "../db/entities/message.js";
import type { SubmissionRow } from "../db/entities/submission.js";
import type { SubmissionRecipientRow } from "../db/entities/submission-recipient.js";
import { insertTogether } from "../db/tables/columns.js";
import { idempotencyRecordStatement } from "../db/tables/idempotency-records.js";
import { messageRowOf, messagesInsert, type MessageInsert } from "../db/tables/messages.js";
import {
  pendingRecipient,
  pendingSubmission,
  recipientRowOf,
  submissionRowOf,
  submissionsInsert,
  type RecipientInsert,
  type SubmissionInsert,
} from "../db/tables/submissions.js";
import { suppressedAmong } from "../db/tables/suppressions.js";
import { lockThreadSummary, newThread, summaryWith, threadsInsert, updateThreadSummaries, type JoiningMessage } from "../db/tables/threads.js";
import type { TenantSqlTx, TenantStore } from "../db/tenant-store.js";
import { Gone, InvalidRequest, NotFound, PermissionDenied, TooLarge } from "../errors.js";
import { newId, newUuid } from "../ids.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { Logger } from "../logger.js";
import { parseOutboundAddress, parseRecipients, type OutboundAddress } from "./addresses.js";
import { composeMime } from "./compose.js";
import { claimIdempotencyKey, requestHash, type IdempotentResult, type SendRoute } from "./idempotency.js";
import type { DeliveryQueue } from "./ports.js";
import { countSend } from "./send-limits.js";

export interface AddressInput {
  readonly email: string;
  readonly name?: string | undefined;
}

export interface SendMessageInput {
  readonly inboxId: string;
  readonly idempotencyKey: string;
  readonly to: readonly AddressInput[];
  readonly subject: string;
  readonly text?: string | undefined;
  readonly html?: string | undefined;
  readonly replyTo?: AddressInput | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}

export interface ReplyInput {
  readonly threadId: string;
  readonly idempotencyKey: string;
  readonly targetMessageId: string;
  readonly text?: string | undefined;
  readonly html?: string | undefined;
}

export interface SendEmailInput {
  readonly idempotencyKey: string;
  readonly from: AddressInput;
  readonly to: readonly AddressInput[];
  readonly subject: string;
  readonly text: string;
  readonly html?: string | undefined;
  readonly replyTo?: AddressInput | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}

export interface SubmissionView {
  readonly submission: SubmissionRow;
  readonly recipients: readonly SubmissionRecipientRow[];
}

export interface SendResult {
  /** The stored mailbox message; null for /v1/send. */
  readonly message: MessageRow | null;
  readonly submission: SubmissionView;
  readonly replayed: boolean;
}

/** The domain check of a customer-domain sender (requireOutbound of the domains module). */
export interface OutboundDomains {
  requireOutbound(organizationId: string, domain: string): Promise<unknown>;
}

export interface OutboundDeps {
  readonly managedDomain: string;
  readonly recipientsPerMessage: number;
  readonly messageContentBytes: number;
  readonly inboxes: Inboxes;
  readonly domains: OutboundDomains;
  readonly deliveries: DeliveryQueue;
  readonly log: Logger;
}

/** Metadata is stored and returned, never written into headers; bounded so a message row stays small. */
const MAX_METADATA_BYTES = 16 * 1024;
const MAX_METADATA_KEYS = 50;
const METADATA_KEY = /^[A-Za-z0-9_.:-]{1,64}$/;
/** References kept on a reply: the thread's first message and the latest ones (RFC 5322 §3.6.4 allows trimming). */
const MAX_REFERENCES = 20;

/** Everything a send writes, decided before the transaction. */
interface Draft {
  readonly route: SendRoute;
  readonly idempotencyKey: string;
  /** What the request was addressed to (inbox, thread and target, or sender): with the content, its identity. */
  readonly target: Readonly<Record<string, string>>;
  readonly inbox: InboxRow | null;
  readonly from: OutboundAddress;
  readonly to: readonly OutboundAddress[];
  readonly replyTo: OutboundAddress | undefined;
  readonly subject: string;
  readonly text: string | undefined;
  readonly html: string | undefined;
  readonly metadata: Record<string, unknown>;
  readonly inReplyTo: string | undefined;
  readonly references: readonly string[];
  /** The thread a reply joins; null starts a new one (send) or none (/v1/send). */
  readonly thread: { readonly id: string } | null;
}

/** The rows a send inserts. */
interface AcceptedRows {
  readonly message: MessageInsert | null;
  readonly submission: SubmissionInsert;
  readonly recipients: readonly RecipientInsert[];
}

/** POST /v1/inboxes/{inboxId}/messages: a new conversation from an inbox. */
export async function sendMessage(deps: OutboundDeps, store: TenantStore, principal: Principal, input: SendMessageInput): Promise<SendResult> {
  const content = newConversation(deps, principal, input);
  return missingTarget(store, "send_message", input.idempotencyKey, async () => {
    const inbox = await deps.inboxes.findActive(store, principal, input.inboxId);
    await requireSendableInbox(deps, principal, inbox);
    return accept(deps, store, {
      route: "send_message",
      idempotencyKey: input.idempotencyKey,
      target: { inboxId: inbox.id },
      inbox,
      from: inboxAddress(inbox),
      ...content,
    });
  });
}

/** POST /v1/threads/{threadId}/replies: answers a message of the thread (spec endpoint rule 3). */
export async function reply(deps: OutboundDeps, store: TenantStore, principal: Principal, input: ReplyInput): Promise<SendResult> {
  return missingTarget(store, "reply", input.idempotencyKey, async () => {
    const thread = await store.findOne(Thread, { id: input.threadId });
    if (!thread || !canAccessInbox(principal, thread.inboxId)) throw new NotFound("thread");
    const inbox = await deps.inboxes.findActive(store, principal, thread.inboxId);
    const target = await store.findOne(Message, { id: input.targetMessageId, threadId: thread.id });
    if (!target) throw new NotFound("target message in this thread");
    const to = replyRecipients(target, inbox);
    checkRecipients(deps, principal, to);
    await requireSendableInbox(deps, principal, inbox);
    return accept(deps, store, {
      route: "reply",
      idempotencyKey: input.idempotencyKey,
      target: { threadId: thread.id, targetMessageId: target.id },
      inbox,
      from: inboxAddress(inbox),
      to,
      replyTo: undefined,
      subject: replySubject(target.subject),
      text: input.text,
      html: input.html,
      metadata: {},
      inReplyTo: target.internetMessageId,
      references: replyReferences(target),
      thread,
    });
  });
}

/** POST /v1/send: from an outbound-verified customer domain, without a mailbox thread. */
export async function sendEmail(deps: OutboundDeps, store: TenantStore, principal: Principal, input: SendEmailInput): Promise<SendResult> {
  requireUnrestrictedInboxes(principal, "send without an inbox (/v1/send)");
  const content = newConversation(deps, principal, input);
  const from = parseOutboundAddress(input.from, "from");
  if (from.domain === deps.managedDomain) {
    throw new PermissionDenied(`/v1/send needs a verified customer domain; ${deps.managedDomain} sends only from inboxes`, "domain_not_verified");
  }
  await deps.domains.requireOutbound(principal.organizationId, from.domain);
  return accept(deps, store, { route: "send_email", idempotencyKey: input.idempotencyKey, target: { from: from.email }, inbox: null, from, ...content });
}

/** GET /v1/submissions/{id}; a key restricted to inboxes sees only their submissions. */
export async function getSubmission(store: TenantStore, principal: Principal, submissionId: string): Promise<SubmissionView> {
  const view = await readSubmission(store, submissionId);
  const inboxId = view?.submission.inboxId;
  if (!view || (principal.inboxIds !== null && (inboxId === null || inboxId === undefined || !canAccessInbox(principal, inboxId)))) {
    throw new NotFound("submission");
  }
  return view;
}

function requireNewConversations(principal: Principal): void {
  if (principal.sendMode === "reply_only") {
    throw new PermissionDenied("this key may only reply to existing threads (sendMode reply_only)", "send_mode_reply_only");
  }
}

/** Recipient policy of the platform and the key: count, allowed domains. */
function checkRecipients(deps: OutboundDeps, principal: Principal, recipients: readonly OutboundAddress[]): void {
  if (recipients.length === 0) throw new InvalidRequest("the message has no recipient", "no_recipients");
  if (recipients.length > deps.recipientsPerMessage) {
    throw new InvalidRequest(`a message may have at most ${deps.recipientsPerMessage} recipients (platformLimits.recipientsPerMessage)`, "too_many_recipients");
  }
  const allowed = principal.allowedRecipientDomains;
  if (allowed !== null) {
    const refused = recipients.filter((r) => !allowed.some((d) => r.domain === d || r.domain.endsWith(`.${d}`)));
    if (refused.length > 0) {
      throw new PermissionDenied(
        `this key may not send to ${refused.map((r) => r.email).join(", ")} (allowedRecipientDomains: ${allowed.join(", ")})`,
        "recipient_domain_not_allowed",
      );
    }
  }
}

function checkMetadata(metadata: Record<string, unknown> | undefined): Record<string, unknown> {
  if (metadata === undefined) return {};
  const keys = Object.keys(metadata);
  if (keys.length > MAX_METADATA_KEYS) throw new InvalidRequest(`metadata may have at most ${MAX_METADATA_KEYS} keys`);
  const bad = keys.find((k) => !METADATA_KEY.test(k));
  if (bad !== undefined) throw new InvalidRequest(`metadata key ${JSON.stringify(bad)} must be 1..64 characters of A-Z a-z 0-9 _ . : -`);
  if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) throw new InvalidRequest(`metadata may be at most ${MAX_METADATA_BYTES} bytes of JSON`);
  return metadata;
}

/** The content of a new conversation (inbox send, /v1/send): the key may start one, recipients and all parsed. */
function newConversation(deps: OutboundDeps, principal: Principal, input: SendMessageInput | SendEmailInput) {
  requireNewConversations(principal);
  const to = parseRecipients(input.to, "to");
  checkRecipients(deps, principal, to);
  return {
    to,
    replyTo: input.replyTo ? parseOutboundAddress(input.replyTo, "replyTo") : undefined,
    subject: input.subject,
    text: input.text,
    html: input.html,
    metadata: checkMetadata(input.metadata),
    inReplyTo: undefined,
    references: [],
    thread: null,
  };
}

async function requireSendableInbox(deps: OutboundDeps, principal: Principal, inbox: InboxRow): Promise<void> {
  if (inbox.domainKind === "customer") await deps.domains.requireOutbound(principal.organizationId, inbox.domain);
}

async function refuseSuppressed(store: TenantStore, recipients: readonly OutboundAddress[]): Promise<void> {
  const rows = await store.sqlRead<{ email: string; reason: string }>((organizationId) =>
    suppressedAmong(
      organizationId,
      recipients.map((r) => r.email),
    ),
  );
  if (rows.length > 0) {
    throw new PermissionDenied(
      `suppressed recipients: ${rows.map((r) => `${r.email} (${r.reason})`).join(", ")}; remove them from the message or DELETE /v1/suppressions first`,
      "recipient_suppressed",
    );
  }
}

async function readSubmission(store: TenantStore, submissionId: string): Promise<SubmissionView | null> {
  const submission = await store.findOne(Submission, { id: submissionId });
  if (!submission) return null;
  const recipients = await store.find(SubmissionRecipient, { submissionId }, { orderBy: { position: "asc" } });
  return { submission, recipients };
}

/**
 * A send whose inbox or thread is gone, found before or inside its transaction: when the key was claimed by an
 * earlier request, its result went with them (410), else the 404 stands.
 */
async function missingTarget<T>(store: TenantStore, route: SendRoute, idempotencyKey: string, find: () => Promise<T>): Promise<T> {
  try {
    return await find();
  } catch (e) {
    if (!(e instanceof NotFound)) throw e;
    const claimed = await store.sqlRead((organizationId) => idempotencyRecordStatement(organizationId, route, idempotencyKey));
    if (claimed.length > 0) {
      throw new Gone("idempotency_result_expired", "the message sent with this idempotency key was deleted; the key cannot be reused");
    }
    throw e;
  }
}

/** The earlier result of an exact retry: 410 when its mailbox message was deleted since. */
async function replay(deps: OutboundDeps, store: TenantStore, earlier: IdempotentResult): Promise<SendResult> {
  const message = earlier.messageId === null ? null : await store.findOne(Message, { id: earlier.messageId });
  const submission = await readSubmission(store, earlier.submissionId);
  if ((earlier.messageId !== null && !message) || !submission) {
    throw new Gone("idempotency_result_expired", "the message sent with this idempotency key was deleted; the key cannot be reused");
  }
  // Still pending: announced again, in case the first announcement was lost (the reconciler would find it too).
  if (submission.submission.status === "pending") deps.deliveries.announce(earlier.submissionId);
  return { message, submission, replayed: true };
}

async function accept(deps: OutboundDeps, store: TenantStore, draft: Draft): Promise<SendResult> {
  requireBody(draft);
  deps.deliveries.requireCapacity();
  const rows = await composeRows(deps, store.organizationId, draft);
  await refuseSuppressed(store, draft.to);
  const outcome = await store.sqlTransaction((tx) => storeAccepted(tx, draft, rows));
  if ("earlier" in outcome) return replay(deps, store, outcome.earlier);
  deps.deliveries.announce(rows.submission.id);
  return {
    message: rows.message ? messageRowOf(rows.message) : null,
    submission: { submission: submissionRowOf(rows.submission), recipients: rows.recipients.map(recipientRowOf) },
    replayed: false,
  };
}

/**
 * The send's transaction: holds the inbox, claims the key (or finds the earlier result of an exact retry), adds the
 * message to its thread, inserts the rows and counts the send.
 */
async function storeAccepted(tx: TenantSqlTx, draft: Draft, rows: AcceptedRows): Promise<{ earlier: IdempotentResult } | { created: true }> {
  if (draft.inbox) await holdInbox(tx, draft.inbox.id);
  const earlier = await claimIdempotencyKey(tx, {
    route: draft.route,
    key: draft.idempotencyKey,
    requestHash: requestHash({
      target: draft.target,
      to: draft.to,
      replyTo: draft.replyTo,
      subject: draft.subject,
      text: draft.text,
      html: draft.html,
      metadata: draft.metadata,
    }),
    result: { submissionId: rows.submission.id, messageId: rows.message?.id ?? null },
    at: rows.submission.createdAt,
  });
  if (earlier) return { earlier };
  const { message } = rows;
  // A reply updates its thread first (under its row lock); a send's new thread goes in with the rows.
  if (message && draft.thread) await joinThread(tx, message);
  const thread = message && !draft.thread ? threadsInsert([newThread({ id: message.threadId, organizationId: tx.organizationId, inboxId: message.inboxId }, joiningOf(message))]) : [];
  await insertTogether(tx, [...thread, ...messagesInsert(message ? [message] : []), ...submissionsInsert([rows.submission], rows.recipients)]);
  await countSend(tx, rows.recipients.length, rows.submission.createdAt);
  return { created: true };
}

/**
 * Everything a send stores, decided before its transaction: the composed message (one Message-ID, the
 * submission's id at the sender's domain) within messageContentBytes, the mailbox message (not for /v1/send) and
 * the submission with its recipients, all pending.
 */
async function composeRows(deps: OutboundDeps, organizationId: string, draft: Draft): Promise<AcceptedRows> {
  const now = new Date();
  const submissionId = newUuid();
  const internetMessageId = `<${submissionId}@${draft.from.domain}>`;
  const mime = await composeMime({
    messageId: internetMessageId,
    from: draft.from,
    to: draft.to,
    replyTo: draft.replyTo,
    subject: draft.subject,
    text: draft.text,
    html: draft.html,
    inReplyTo: draft.inReplyTo,
    references: draft.references,
    date: now,
  });
  if (mime.length > deps.messageContentBytes) {
    throw new TooLarge("message_too_large", `the composed message is ${mime.length} bytes; platformLimits.messageContentBytes is ${deps.messageContentBytes}`);
  }
  const message = draft.inbox ? mailboxMessageOf(organizationId, draft, draft.inbox, { submissionId, internetMessageId, at: now }) : null;
  const submission = pendingSubmission({
    id: submissionId,
    organizationId,
    inboxId: draft.inbox?.id ?? null,
    messageId: message?.id ?? null,
    from: stored(draft.from),
    subject: draft.subject,
    metadata: draft.metadata,
    internetMessageId,
    mime,
    taskQueue: deps.deliveries.taskQueue,
    createdAt: now,
  });
  const recipients = draft.to.map((r, position) =>
    pendingRecipient({ id: newUuid(), organizationId, submissionId, position, email: r.email, name: r.name ?? null, domain: r.domain, updatedAt: now }),
  );
  return { message, submission, recipients };
}

/** The mailbox message of an inbox send or reply: a reply joins its thread, a send starts one. */
function mailboxMessageOf(
  organizationId: string,
  draft: Draft,
  inbox: InboxRow,
  sent: { readonly submissionId: string; readonly internetMessageId: string; readonly at: Date },
): MessageInsert {
  return {
    id: newId("msg"),
    organizationId,
    inboxId: inbox.id,
    threadId: draft.thread?.id ?? newId("thr"),
    direction: "outbound",
    internetMessageId: sent.internetMessageId,
    inReplyTo: draft.inReplyTo ?? null,
    references: draft.references,
    from: stored(draft.from),
    to: draft.to.map(stored),
    replyTo: draft.replyTo ? stored(draft.replyTo) : null,
    subject: draft.subject,
    text: draft.text ?? "",
    html: draft.html ?? null,
    metadata: draft.metadata,
    deliveryStatus: "submitted",
    submissionId: sent.submissionId,
    failureCode: null,
    inboundSecurity: null,
    attachmentsScanState: null,
    rawId: null,
    parseProblem: null,
    createdAt: sent.at,
    updatedAt: sent.at,
  };
}

function requireBody(draft: Draft): void {
  if (draft.text === undefined && draft.html === undefined) throw new InvalidRequest("text or html is required");
}

function stored(a: OutboundAddress): StoredAddress {
  return a.name === undefined ? { email: a.email } : { email: a.email, name: a.name };
}

function inboxAddress(inbox: InboxRow): OutboundAddress {
  return { email: inbox.address, domain: inbox.domain, ...(inbox.displayName ? { name: inbox.displayName } : {}) };
}

/**
 * Spec endpoint rule 3: an inbound target is answered at its first valid Reply-To mailbox, else its From; an
 * outbound target goes again to all its To recipients except the inbox itself.
 */
export function replyRecipients(target: Pick<MessageRow, "direction" | "from" | "to" | "replyTo">, inbox: Pick<InboxRow, "address">): OutboundAddress[] {
  const valid = (a: StoredAddress | null | undefined): OutboundAddress | undefined => {
    if (!a) return undefined;
    try {
      return parseOutboundAddress({ email: a.email, ...(a.name ? { name: a.name.replace(/[\r\n\t]+/g, " ") } : {}) }, "recipient");
    } catch {
      return undefined;
    }
  };
  if (target.direction === "inbound") {
    const recipient = valid(target.replyTo) ?? valid(target.from);
    if (!recipient) throw new InvalidRequest("the target message has no valid Reply-To or From address to answer", "no_recipients");
    return [recipient];
  }
  const seen = new Set<string>();
  const recipients: OutboundAddress[] = [];
  for (const a of target.to) {
    const r = valid(a);
    if (r && r.email !== inbox.address.toLowerCase() && !seen.has(r.email)) {
      seen.add(r.email);
      recipients.push(r);
    }
  }
  if (recipients.length === 0) throw new InvalidRequest("the target message has no recipient other than this inbox", "no_recipients");
  return recipients;
}

/** One "Re: " in front, never "Re: Re: "; line breaks an inbound subject may carry become spaces. */
export function replySubject(subject: string): string {
  const flat = subject.replace(/[\r\n]+/g, " ").trim();
  return /^re:/i.test(flat) ? flat : `Re: ${flat}`;
}

/** The target's References plus its Message-ID, trimmed to the first and the latest ids. */
export function replyReferences(target: Pick<MessageRow, "references" | "internetMessageId" | "inReplyTo">): string[] {
  const chain = target.references.length > 0 ? [...target.references] : target.inReplyTo ? [target.inReplyTo] : [];
  const all = [...new Set([...chain, target.internetMessageId])].filter((id) => !/[\r\n]/.test(id));
  return all.length <= MAX_REFERENCES ? all : [all[0]!, ...all.slice(all.length - (MAX_REFERENCES - 1))];
}

/**
 * Holds the sending inbox until the send commits. FOR SHARE lets sends proceed together but makes a delete (an
 * update of the row) wait for them, so the purge that follows finds what they stored; a send that comes after the
 * delete finds the inbox deleting and stores nothing.
 */
async function holdInbox(tx: TenantSqlTx, inboxId: string): Promise<void> {
  const rows = await tx.query(
    "select 1 from inboxes where id = $1 and organization_id = $2 and status = 'active' for share",
    [inboxId, tx.organizationId],
  );
  if (rows.length === 0) throw new NotFound("inbox");
}

/** What an outbound message adds to its thread's summary: the addresses it is stored with (it has no Cc). */
function joiningOf(message: MessageInsert): JoiningMessage {
  return { subject: message.subject, from: message.from, to: message.to, cc: [], at: message.createdAt };
}

/** Adds a reply to its thread's summary under the thread's row lock (concurrent replies and inbound mail both count). */
async function joinThread(tx: TenantSqlTx, message: MessageInsert): Promise<void> {
  const current = await lockThreadSummary(tx, tx.organizationId, message.threadId);
  if (!current) throw new NotFound("thread");
  const summary = summaryWith(current, joiningOf(message));
  await updateThreadSummaries(tx, [{ id: message.threadId, organizationId: tx.organizationId, ...summary, updatedAt: message.createdAt }]);
}
