// Outbound acceptance: inbox send, reply, forward and /v1/send. Each parses its recipients once (to, cc and bcc, each
// address once in the three, counted together against the limits, every one under the key's recipient policy), then
// in this order: an exact retry of a send with files is answered from its earlier result before any is read or
// fetched again; sends
// are refused while delivery is backlogged or a recipient is suppressed; the files to attach are resolved (uploads,
// URLs fetched once, inline bytes scanned) and the message composed once (Cc in its headers, Bcc never); the hold
// policy decides whether it waits for a person. Then one transaction holds the sending inbox (a delete waits for the
// send), claims the idempotency key, stores the mailbox message (not for /v1/send) with its attachments, the
// submission with its composed bytes and one recipient per address with its kind, the recipients as the sender's
// contacts (not for a held send) or the submission.held event (for one), and counts the send against the
// organization's limits. After the commit the delivery workers are told (DeliveryQueue.announce; they start the
// workflow of a held submission too, which waits for the decision); no Temporal call holds up the answer. The
// transaction is plain SQL with bound parameters (TenantStore.sqlTransaction): through the ORM the composed message
// travelled inlined as hex in the statement text, the largest CPU cost of acceptance (bench:outbound's profile).
import type { Principal } from "../auth/principal.js";
import { canAccessInbox, requireUnrestrictedInboxes } from "../auth/principal.js";
import { Attachment, Message, Thread } from "../db/entities/index.js";
import type { InboxRow } from "../db/entities/inbox.js";
import type { MessageRow, StoredAddress } from "../db/entities/message.js";
import { insertAttachments, type AttachmentInsert } from "../db/tables/attachments.js";
import { insertTogether } from "../db/tables/columns.js";
import { contactsInsert } from "../db/tables/contacts.js";
import { idempotencyRecordOf, idempotencyRecordStatement } from "../db/tables/idempotency-records.js";
import { messageRowOf, messagesInsert, type MessageInsert } from "../db/tables/messages.js";
import {
  acceptedRecipient,
  acceptedSubmission,
  recipientRowOf,
  submissionRowOf,
  submissionsInsert,
  type RecipientInsert,
  type RecipientKind,
  type SubmissionInsert,
} from "../db/tables/submissions.js";
import { suppressedAmong } from "../db/tables/suppressions.js";
import { lockThreadSummary, newThread, summaryWith, threadsInsert, updateThreadSummaries, type JoiningMessage } from "../db/tables/threads.js";
import type { TenantSqlTx, TenantStore } from "../db/tenant-store.js";
import type { NewEvent } from "../events/event.js";
import { appendEvents } from "../events/log.js";
import { submissionHeldEvent } from "../events/submission-held.js";
import { Conflict, Gone, InvalidRequest, NotFound, PermissionDenied, TooLarge } from "../errors.js";
import { attachmentId, sanitizeFilename } from "../inbound/attachments.js";
import { newId, newUuid } from "../ids.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { Logger } from "../logger.js";
import { contactsOf } from "../mailbox/contacts.js";
import type { AttachmentSummary } from "../mailbox/message-pages.js";
import { everyRecipient, parseAllRecipients, parseOutboundAddress, parseRecipients, type OutboundAddress, type Recipients } from "./addresses.js";
import { composeMime, type ComposeAttachment } from "./compose.js";
import { forwardContent, readOriginal, type ForwardMode } from "./forward.js";
import { holdReasonOf, type HoldReason } from "./holds.js";
import { claimIdempotencyKey, requestHash, type IdempotentResult, type SendRoute } from "./idempotency.js";
import { mediaTypeOf } from "./media-type.js";
import { attachmentIdentity, resolveAttachments, type AttachmentInput, type OutgoingFilesDeps } from "./outgoing-attachments.js";
import type { DeliveryQueue } from "./ports.js";
import { replyRecipients, replyReferences, replySubject } from "./reply.js";
import { countSend } from "./send-limits.js";
import { readSubmission, type SubmissionView } from "./submissions.js";

export interface AddressInput {
  readonly email: string;
  readonly name?: string | undefined;
}

/** The recipients a send gives: To, and optionally Cc and Bcc. */
interface AddressedInput {
  readonly to: readonly AddressInput[];
  readonly cc?: readonly AddressInput[] | undefined;
  readonly bcc?: readonly AddressInput[] | undefined;
}

export interface SendMessageInput extends AddressedInput {
  readonly inboxId: string;
  readonly idempotencyKey: string;
  readonly subject: string;
  readonly text?: string | undefined;
  readonly html?: string | undefined;
  readonly replyTo?: AddressInput | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
  readonly attachments?: readonly AttachmentInput[] | undefined;
}

export interface ReplyInput {
  readonly threadId: string;
  readonly idempotencyKey: string;
  readonly targetMessageId: string;
  readonly text?: string | undefined;
  readonly html?: string | undefined;
  readonly replyAll?: boolean | undefined;
  readonly cc?: readonly AddressInput[] | undefined;
  readonly bcc?: readonly AddressInput[] | undefined;
  readonly attachments?: readonly AttachmentInput[] | undefined;
}

export interface ForwardInput extends AddressedInput {
  readonly messageId: string;
  readonly idempotencyKey: string;
  readonly text?: string | undefined;
  readonly html?: string | undefined;
  readonly mode?: ForwardMode | undefined;
}

export interface SendEmailInput extends AddressedInput {
  readonly idempotencyKey: string;
  readonly from: AddressInput;
  readonly subject: string;
  readonly text: string;
  readonly html?: string | undefined;
  readonly replyTo?: AddressInput | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
  readonly attachments?: readonly AttachmentInput[] | undefined;
}

export type { SubmissionView };

export interface SendResult {
  /** The stored mailbox message; null for /v1/send. */
  readonly message: MessageRow | null;
  /** The stored message's attachments (none for /v1/send). */
  readonly attachments: readonly AttachmentSummary[];
  readonly submission: SubmissionView;
  readonly replayed: boolean;
}

/** The domain check of a customer-domain sender (requireOutbound of the domains module). */
export interface OutboundDomains {
  requireOutbound(organizationId: string, domain: string): Promise<unknown>;
}

/** The webhook outbox as acceptance uses it: submission.held events for the endpoints that asked for them. */
export interface HeldEventOutbox {
  enqueue(tx: TenantSqlTx, events: readonly NewEvent[]): Promise<unknown[]>;
  dispatch(enqueued: readonly unknown[]): void;
}

export interface OutboundDeps {
  readonly managedDomain: string;
  readonly recipientsPerMessage: number;
  readonly messageContentBytes: number;
  readonly inboxes: Inboxes;
  readonly domains: OutboundDomains;
  readonly deliveries: DeliveryQueue;
  /** Uploads and URL fetches of attachments. */
  readonly files: OutgoingFilesDeps;
  readonly outbox: HeldEventOutbox;
  readonly log: Logger;
}

/** Metadata is stored and returned, never written into headers; bounded so a message row stays small. */
const MAX_METADATA_BYTES = 16 * 1024;
const MAX_METADATA_KEYS = 50;
const METADATA_KEY = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Everything a send writes, decided before the transaction. */
interface Draft {
  readonly route: SendRoute;
  readonly idempotencyKey: string;
  /** What identifies the request for its idempotency (addressed to, content, files by their identity). */
  readonly identity: Readonly<Record<string, unknown>>;
  readonly inbox: InboxRow | null;
  readonly from: OutboundAddress;
  readonly recipients: Recipients;
  readonly replyTo: OutboundAddress | undefined;
  readonly subject: string;
  readonly text: string | undefined;
  readonly html: string | undefined;
  readonly metadata: Record<string, unknown>;
  readonly inReplyTo: string | undefined;
  readonly references: readonly string[];
  /** The thread a reply or forward joins; null starts a new one (send) or none (/v1/send). */
  readonly thread: { readonly id: string } | null;
  /** Files named by the request, resolved after the idempotency check. */
  readonly attachments: readonly AttachmentInput[];
  /** Files at hand already (a forward's), attached after those. */
  readonly carried: readonly ComposeAttachment[];
}

/** The rows a send inserts. */
interface AcceptedRows {
  readonly message: MessageInsert | null;
  readonly attachments: readonly AttachmentInsert[];
  readonly submission: SubmissionInsert;
  readonly recipients: readonly RecipientInsert[];
}

/** POST /v1/inboxes/{inboxId}/messages: a new conversation from an inbox. */
export async function sendMessage(deps: OutboundDeps, store: TenantStore, principal: Principal, input: SendMessageInput): Promise<SendResult> {
  const content = newConversation(deps, principal, input);
  return missingTarget(store, "send_message", input.idempotencyKey, async () => {
    const inbox = await deps.inboxes.findActive(store, principal, input.inboxId);
    await requireSendableInbox(deps, principal, inbox);
    const from = inboxAddress(inbox);
    return accept(deps, store, principal, { ...content, route: "send_message", idempotencyKey: input.idempotencyKey, inbox, from, identity: identityOf({ inboxId: inbox.id }, content) });
  });
}

/** POST /v1/threads/{threadId}/replies: answers a message of the thread (spec endpoint rule 3), or everyone on it. */
export async function reply(deps: OutboundDeps, store: TenantStore, principal: Principal, input: ReplyInput): Promise<SendResult> {
  return missingTarget(store, "reply", input.idempotencyKey, async () => {
    const thread = await store.findOne(Thread, { id: input.threadId });
    if (!thread || !canAccessInbox(principal, thread.inboxId)) throw new NotFound("thread");
    const inbox = await deps.inboxes.findActive(store, principal, thread.inboxId);
    const target = await store.findOne(Message, { id: input.targetMessageId, threadId: thread.id });
    if (!target) throw new NotFound("target message in this thread");
    const answered = replyRecipients(target, inbox, input.replyAll === true);
    const seen = new Set([...answered.to, ...answered.cc].map((r) => r.email));
    const recipients = { to: answered.to, cc: [...answered.cc, ...parseRecipients(input.cc ?? [], "cc", seen)], bcc: parseRecipients(input.bcc ?? [], "bcc", seen) };
    checkRecipients(deps, principal, recipients);
    await requireSendableInbox(deps, principal, inbox);
    const content = {
      recipients,
      replyTo: undefined,
      subject: replySubject(target.subject),
      text: input.text,
      html: input.html,
      metadata: {},
      inReplyTo: target.internetMessageId,
      references: replyReferences(target),
      thread,
      attachments: input.attachments ?? [],
      carried: [],
    };
    const identity = identityOf({ threadId: thread.id, targetMessageId: target.id }, content, { replyAll: input.replyAll === true ? true : undefined });
    return accept(deps, store, principal, { ...content, route: "reply", idempotencyKey: input.idempotencyKey, identity, inbox, from: inboxAddress(inbox) });
  });
}

/** POST /v1/messages/{messageId}:forward: the message to new recipients from its inbox, in its thread. */
export async function forward(deps: OutboundDeps, store: TenantStore, principal: Principal, input: ForwardInput): Promise<SendResult> {
  requireNewConversations(principal, "forward");
  const recipients = parseAllRecipients(input);
  checkRecipients(deps, principal, recipients);
  const mode = input.mode ?? "inline";
  return missingTarget(store, "forward", input.idempotencyKey, async () => {
    const original = await store.findOne(Message, { id: input.messageId });
    if (!original || !canAccessInbox(principal, original.inboxId)) throw new NotFound("message");
    const inbox = await deps.inboxes.findActive(store, principal, original.inboxId);
    await requireSendableInbox(deps, principal, inbox);
    const forwarded = await forwardContent(await readOriginal(store, original), mode, input);
    const identity = identityOf({ messageId: original.id }, { recipients, text: input.text, html: input.html }, { mode });
    return accept(deps, store, principal, {
      route: "forward",
      idempotencyKey: input.idempotencyKey,
      identity,
      inbox,
      from: inboxAddress(inbox),
      recipients,
      replyTo: undefined,
      subject: forwarded.subject,
      text: forwarded.text,
      html: forwarded.html,
      metadata: {},
      inReplyTo: undefined,
      references: replyReferences(original),
      thread: { id: original.threadId },
      attachments: [],
      carried: forwarded.files,
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
  return accept(deps, store, principal, { ...content, route: "send_email", idempotencyKey: input.idempotencyKey, inbox: null, from, identity: identityOf({ from: from.email }, content) });
}

function requireNewConversations(principal: Principal, action = "start a conversation"): void {
  if (principal.sendMode === "reply_only") {
    throw new PermissionDenied(`this key may only reply to existing threads (sendMode reply_only), not ${action}`, "send_mode_reply_only");
  }
}

/** Recipient policy of the platform and the key over every recipient (to, cc and bcc): count, allowed domains. */
function checkRecipients(deps: OutboundDeps, principal: Principal, recipients: Recipients): void {
  const all = everyRecipient(recipients);
  if (recipients.to.length === 0 && all.length > 0) throw new InvalidRequest("the message needs a To recipient", "no_recipients");
  if (all.length === 0) throw new InvalidRequest("the message has no recipient", "no_recipients");
  if (all.length > deps.recipientsPerMessage) {
    throw new InvalidRequest(
      `a message may have at most ${deps.recipientsPerMessage} recipients in to, cc and bcc together (platformLimits.recipientsPerMessage)`,
      "too_many_recipients",
    );
  }
  const allowed = principal.allowedRecipientDomains;
  if (allowed !== null) {
    const refused = all.filter((r) => !allowed.some((d) => r.domain === d || r.domain.endsWith(`.${d}`)));
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
  const recipients = parseAllRecipients(input);
  checkRecipients(deps, principal, recipients);
  return {
    recipients,
    replyTo: input.replyTo ? parseOutboundAddress(input.replyTo, "replyTo") : undefined,
    subject: input.subject,
    text: input.text,
    html: input.html,
    metadata: checkMetadata(input.metadata),
    inReplyTo: undefined,
    references: [],
    thread: null,
    attachments: input.attachments ?? [],
    carried: [],
  };
}

/**
 * What identifies a request for its idempotency: the target, the recipients and the content as given, each file by
 * attachmentIdentity. Cc, Bcc, files and the route's options count only when given, so a request without them
 * hashes as it did before they existed.
 */
function identityOf(
  target: Readonly<Record<string, string>>,
  content: Pick<Draft, "recipients" | "text" | "html"> & Partial<Pick<Draft, "replyTo" | "subject" | "metadata" | "attachments">>,
  options: Readonly<Record<string, unknown>> = {},
): Record<string, unknown> {
  const { recipients, attachments = [] } = content;
  const given = <T>(list: readonly T[]) => (list.length > 0 ? list : undefined);
  return {
    target,
    to: recipients.to,
    cc: given(recipients.cc),
    bcc: given(recipients.bcc),
    replyTo: content.replyTo,
    subject: content.subject,
    text: content.text,
    html: content.html,
    metadata: content.metadata,
    attachments: given(attachments.map(attachmentIdentity)),
    ...options,
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

/**
 * A send whose inbox, thread or message is gone, found before or inside its transaction: when the key was claimed by
 * an earlier request, its result went with them (410), else the 404 stands.
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

/**
 * The earlier result of this key, found before anything is fetched or composed (an exact retry must not fetch its
 * URLs again): null when the key is unclaimed; 409 when it was claimed for a different request. The claim in the
 * transaction stays the arbiter of two requests racing with one key.
 */
async function earlierResult(store: TenantStore, route: SendRoute, key: string, hash: string): Promise<IdempotentResult | null> {
  const [row] = await store.sqlRead<{ request_hash: string; submission_id: string; message_id: string | null }>((organizationId) =>
    idempotencyRecordStatement(organizationId, route, key),
  );
  if (!row) return null;
  const record = idempotencyRecordOf(row);
  if (record.requestHash !== hash) {
    throw new Conflict("idempotency_key_conflict", "this idempotency key was already used with a different request; use a fresh key for a new message");
  }
  return { submissionId: record.submissionId, messageId: record.messageId };
}

/** The earlier result of an exact retry: 410 when its mailbox message was deleted since. */
async function replay(deps: OutboundDeps, store: TenantStore, earlier: IdempotentResult): Promise<SendResult> {
  const message = earlier.messageId === null ? null : await store.findOne(Message, { id: earlier.messageId });
  const submission = await readSubmission(store, earlier.submissionId);
  if ((earlier.messageId !== null && !message) || !submission) {
    throw new Gone("idempotency_result_expired", "the message sent with this idempotency key was deleted; the key cannot be reused");
  }
  // Still pending or held: announced again, in case the first announcement was lost (the reconcilers would find it too).
  if (submission.submission.status === "pending" || submission.submission.status === "held") deps.deliveries.announce(earlier.submissionId);
  const attachments = message ? await store.find(Attachment, { messageId: message.id }, { orderBy: { position: "asc" } }) : [];
  return { message, attachments, submission, replayed: true };
}

async function accept(deps: OutboundDeps, store: TenantStore, principal: Principal, draft: Draft): Promise<SendResult> {
  requireBody(draft);
  const hash = requestHash(draft.identity);
  // Files are read or fetched only for a request that is not a retry. Without files nothing would be done twice,
  // and the claim in the transaction answers a retry without this round trip (the hot path of bench:outbound).
  const earlier = draft.attachments.length > 0 ? await earlierResult(store, draft.route, draft.idempotencyKey, hash) : null;
  if (earlier) return replay(deps, store, earlier);
  deps.deliveries.requireCapacity();
  const recipients = everyRecipient(draft.recipients);
  await refuseSuppressed(store, recipients);
  const files = [...(await resolveAttachments(deps.files, store, principal, draft.attachments, deps.messageContentBytes)), ...draft.carried];
  const heldReason = await holdReasonOf(store, principal.holdFor, draft.from.email, recipients);
  const rows = await composeRows(deps, store.organizationId, draft, files, { heldReason, keyId: principal.keyId });
  const outcome = await store.sqlTransaction((tx) => storeAccepted(deps, tx, draft, rows, hash));
  if ("earlier" in outcome) return replay(deps, store, outcome.earlier);
  deps.outbox.dispatch(outcome.enqueued);
  deps.deliveries.announce(rows.submission.id);
  return {
    message: rows.message ? messageRowOf(rows.message) : null,
    attachments: rows.attachments.map((a) => ({ id: a.id, filename: a.filename, contentType: a.contentType, size: a.content.byteLength, scanState: a.scanState })),
    submission: { submission: submissionRowOf(rows.submission), recipients: rows.recipients.map(recipientRowOf) },
    replayed: false,
  };
}

/**
 * The send's transaction: holds the inbox, claims the key (or finds the earlier result of an exact retry), adds the
 * message to its thread, inserts the rows, records the recipients as contacts (or, held, the submission.held event)
 * and counts the send.
 */
async function storeAccepted(
  deps: OutboundDeps,
  tx: TenantSqlTx,
  draft: Draft,
  rows: AcceptedRows,
  hash: string,
): Promise<{ earlier: IdempotentResult } | { enqueued: unknown[] }> {
  if (draft.inbox) await holdInbox(tx, draft.inbox.id);
  const { message, submission } = rows;
  const earlier = await claimIdempotencyKey(tx, {
    route: draft.route,
    key: draft.idempotencyKey,
    requestHash: hash,
    result: { submissionId: submission.id, messageId: message?.id ?? null },
    at: submission.createdAt,
  });
  if (earlier) return { earlier };
  // A reply or forward updates its thread first (under its row lock); a send's new thread goes in with the rows.
  if (message && draft.thread) await joinThread(tx, message);
  const thread = message && !draft.thread ? threadsInsert([newThread({ id: message.threadId, organizationId: tx.organizationId, inboxId: message.inboxId }, joiningOf(message))]) : [];
  const held = submission.heldReason !== null;
  const contacts = held ? [] : contactsOf(tx.organizationId, draft.from.email, rows.recipients.map((r) => r.email), submission.createdAt);
  await insertTogether(tx, [...thread, ...messagesInsert(message ? [message] : []), ...submissionsInsert([submission], rows.recipients), ...contactsInsert(contacts)]);
  // The files apart: their bytes are bound as binary, one row each.
  await insertAttachments(tx, rows.attachments);
  await countSend(tx, rows.recipients.length, submission.createdAt);
  if (!held) return { enqueued: [] };
  const event = submissionHeldEvent(
    { organizationId: tx.organizationId, submissionId: submission.id, message: message ? { messageId: message.id, inboxId: message.inboxId, threadId: message.threadId } : null },
    submission.createdAt,
  );
  const enqueued = await deps.outbox.enqueue(tx, [event]);
  // Last: it holds the organization's event-log turn until the commit.
  await appendEvents(tx, [event]);
  return { enqueued };
}

/**
 * Everything a send stores, decided before its transaction: the composed message (one Message-ID, the
 * submission's id at the sender's domain) within messageContentBytes, the mailbox message (not for /v1/send) with its
 * attachments, and the submission with its recipients in order (To, Cc, Bcc), pending or held.
 */
async function composeRows(
  deps: OutboundDeps,
  organizationId: string,
  draft: Draft,
  files: readonly ComposeAttachment[],
  acceptance: { readonly heldReason: HoldReason | null; readonly keyId: string },
): Promise<AcceptedRows> {
  const now = new Date();
  const submissionId = newUuid();
  const internetMessageId = `<${submissionId}@${draft.from.domain}>`;
  const { to, cc } = draft.recipients;
  const mime = await composeMime({
    messageId: internetMessageId,
    from: draft.from,
    to,
    cc,
    replyTo: draft.replyTo,
    subject: draft.subject,
    text: draft.text,
    html: draft.html,
    inReplyTo: draft.inReplyTo,
    references: draft.references,
    attachments: files,
    date: now,
  });
  if (mime.length > deps.messageContentBytes) {
    throw new TooLarge("message_too_large", `the composed message is ${mime.length} bytes; platformLimits.messageContentBytes is ${deps.messageContentBytes}`);
  }
  const held = acceptance.heldReason !== null;
  const message = draft.inbox ? mailboxMessageOf(organizationId, draft, draft.inbox, { submissionId, internetMessageId, at: now, held }) : null;
  const submission = acceptedSubmission(
    {
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
      createdByKeyId: acceptance.keyId,
      createdAt: now,
    },
    acceptance.heldReason,
  );
  const kinds: [RecipientKind, readonly OutboundAddress[]][] = [
    ["to", to],
    ["cc", cc],
    ["bcc", draft.recipients.bcc],
  ];
  const recipients = kinds
    .flatMap(([kind, list]) => list.map((r) => ({ kind, r })))
    .map(({ kind, r }, position) =>
      acceptedRecipient({ id: newUuid(), organizationId, submissionId, position, email: r.email, name: r.name ?? null, domain: r.domain, kind, updatedAt: now }, held),
    );
  const attachments = message ? attachmentRowsOf(message, files) : [];
  return { message, attachments, submission, recipients };
}

/** The stored outbound message's attachments: clean (scanned before the send was accepted), ids as inbound ones have. */
function attachmentRowsOf(message: MessageInsert, files: readonly ComposeAttachment[]): AttachmentInsert[] {
  return files.map((f, i) => ({
    id: attachmentId(message.id, i + 1),
    organizationId: message.organizationId,
    inboxId: message.inboxId,
    messageId: message.id,
    position: i + 1,
    filename: sanitizeFilename(f.filename, i + 1),
    contentType: mediaTypeOf(f.contentType),
    content: f.content,
    scanState: "clean",
    scanDetail: null,
    scannedAt: message.createdAt,
    createdAt: message.createdAt,
  }));
}

/** The mailbox message of an inbox send, reply or forward: Cc kept, never Bcc; held while its submission is. */
function mailboxMessageOf(
  organizationId: string,
  draft: Draft,
  inbox: InboxRow,
  sent: { readonly submissionId: string; readonly internetMessageId: string; readonly at: Date; readonly held: boolean },
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
    to: draft.recipients.to.map(stored),
    cc: draft.recipients.cc.map(stored),
    replyTo: draft.replyTo ? stored(draft.replyTo) : null,
    subject: draft.subject,
    text: draft.text ?? "",
    html: draft.html ?? null,
    metadata: draft.metadata,
    deliveryStatus: sent.held ? "held" : "submitted",
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
  if (draft.text === undefined && draft.html === undefined && draft.carried.length === 0) throw new InvalidRequest("text or html is required");
}

function stored(a: OutboundAddress): StoredAddress {
  return a.name === undefined ? { email: a.email } : { email: a.email, name: a.name };
}

function inboxAddress(inbox: InboxRow): OutboundAddress {
  return { email: inbox.address, domain: inbox.domain, ...(inbox.displayName ? { name: inbox.displayName } : {}) };
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

/** What an outbound message adds to its thread's summary: the addresses it is stored with (its Cc, never its Bcc). */
function joiningOf(message: MessageInsert): JoiningMessage {
  return { subject: message.subject, from: message.from, to: message.to, cc: message.cc, at: message.createdAt };
}

/** Adds a reply or forward to its thread's summary under the thread's row lock (concurrent ones and inbound mail count). */
async function joinThread(tx: TenantSqlTx, message: MessageInsert): Promise<void> {
  const current = await lockThreadSummary(tx, tx.organizationId, message.threadId);
  if (!current) throw new NotFound("thread");
  const summary = summaryWith(current, joiningOf(message));
  await updateThreadSummaries(tx, [{ id: message.threadId, organizationId: tx.organizationId, ...summary, updatedAt: message.createdAt }]);
}
