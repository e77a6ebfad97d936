// Entity → proto mappers: the one place where stored rows become contract messages.
import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate, ListValueSchema, type ListValue } from "@bufbuild/protobuf/wkt";
import { GetMeResponseSchema, type GetMeResponse, type PlatformLimits } from "../../gen/mailbox/v1/account_service_pb.js";
import {
  InboxSchema,
  MessageSchema,
  SubmissionSchema,
  ThreadSummarySchema,
  type Address,
  type Inbox,
  type Message,
  type Submission,
  type ThreadSummary,
} from "../../gen/mailbox/v1/resources_pb.js";
import type { OutgoingAttachment } from "../../gen/mailbox/v1/resources_pb.js";
import type { AttachmentInput, AttachmentSource } from "../outbound/outgoing-attachments.js";
import type { SendResult } from "../outbound/outbound.js";
import type { SubmissionView } from "../outbound/submissions.js";
import {
  CapabilityStateSchema,
  DomainCheckSchema,
  DomainSchema,
  DomainTrafficSchema,
  VerifyDomainResponseSchema,
  type CapabilityState,
  type Domain,
  type DomainCheck,
  type DomainTraffic,
  type VerifyDomainResponse,
} from "../../gen/mailbox/v1/domain_service_pb.js";
import { EmailValidationSchema, type EmailValidation } from "../../gen/mailbox/v1/validation_service_pb.js";
import type { AccessProfile } from "../accounts/profile.js";
import type { CapabilityRecord, CustomerDomainRow } from "../db/entities/customer-domain.js";
import { isEnabled } from "../domains/capability-state.js";
import { recordsToPublish, type DomainCheck as Check, type DomainRecordSettings } from "../domains/checks.js";
import type { DomainTraffic as Traffic } from "../domains/domains.js";
import type { Verification } from "../domains/verifier.js";
import type { ValidationResult } from "../validation/classify.js";
import type { InboxView } from "../inboxes/inboxes.js";
import type { StoredAddress, StoredAuthentication, StoredInboundSecurity } from "../db/entities/message.js";
import type { Extracted } from "../extraction/index.js";
import { extractedOf } from "../db/tables/messages.js";
import { SenderRulesSchema, type SenderRules } from "../../gen/mailbox/v1/sender_rule_service_pb.js";
import type { AppliedSenderRules } from "../senders/sender-rules.js";
import type { ThreadRow } from "../db/entities/thread.js";
import type { MessageWithAttachments } from "../mailbox/message-pages.js";
import {
  CreateWebhookResponseSchema,
  WebhookEndpointSchema,
  type CreateWebhookResponse,
  type WebhookEndpoint,
} from "../../gen/mailbox/v1/webhook_service_pb.js";
import type { WebhookEndpointRow } from "../db/entities/webhook-endpoint.js";
import { EventSchema, type Event } from "../../gen/mailbox/v1/event_service_pb.js";
import type { EventPayload } from "../events/event.js";

export function toInbox(row: InboxView): Inbox {
  return create(InboxSchema, {
    id: row.id,
    localPart: row.localPart,
    domainId: row.domainId ?? undefined,
    domainKind: row.domainKind,
    domain: row.domain,
    address: row.address,
    displayName: row.displayName,
    status: row.status,
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  });
}

function stringList(values: readonly string[] | null): ListValue | undefined {
  if (values === null) return undefined;
  return create(ListValueSchema, { values: values.map((v) => ({ kind: { case: "stringValue" as const, value: v } })) });
}

export function toGetMeResponse(profile: AccessProfile, platformLimits: Omit<PlatformLimits, "$typeName">): GetMeResponse {
  const { organization: org, principal: key } = profile;
  return create(GetMeResponseSchema, {
    organization: {
      id: org.id,
      status: org.status,
      sendLimits: {
        messagesPerMinute: org.messagesPerMinute,
        messagesPerDay: org.messagesPerDay,
        recipientsPerDay: org.recipientsPerDay,
      },
      holdFor: org.holdFor,
    },
    apiKey: {
      id: key.keyId,
      kind: key.kind,
      scopes: [...key.scopes],
      inboxIds: stringList(key.inboxIds),
      allowedIps: stringList(key.allowedIps),
      sendMode: key.sendMode,
      allowedRecipientDomains: stringList(key.allowedRecipientDomains),
      expiresAt: key.expiresAt ? timestampFromDate(key.expiresAt) : undefined,
      requestsPerMinute: key.requestsPerMinute,
      holdFor: key.keyHoldFor ?? undefined,
    },
    managedStarter: profile.managedStarter,
    platformLimits,
  });
}

function toAddress(a: StoredAddress): Omit<Address, "$typeName"> {
  return a.name === undefined ? { email: a.email } : { email: a.email, name: a.name };
}

/**
 * Every message lists its attachments and Cc (outbound ones as sent, never Bcc); inbound ones carry inboundSecurity
 * and extracted (null when stored before extraction existed), outbound ones neither (spec Message table).
 */
export function toMessage({ message: m, attachments }: MessageWithAttachments): Message {
  const security = m.inboundSecurity;
  return create(MessageSchema, {
    id: m.id,
    inboxId: m.inboxId,
    threadId: m.threadId,
    direction: m.direction,
    internetMessageId: m.internetMessageId,
    inReplyTo: m.inReplyTo ?? undefined,
    references: m.references,
    from: toAddress(m.from),
    to: m.to.map(toAddress),
    subject: m.subject,
    text: m.text,
    html: m.html ?? undefined,
    replyTo: m.replyTo ? toAddress(m.replyTo) : undefined,
    metadata: m.metadata as JsonObject,
    delivery: { submissionId: m.submissionId ?? undefined, status: m.deliveryStatus, failureCode: m.failureCode ?? undefined },
    createdAt: timestampFromDate(m.createdAt),
    updatedAt: timestampFromDate(m.updatedAt),
    attachments: attachments.map((a) => ({
      id: a.id,
      filename: a.filename,
      contentType: a.contentType,
      size: a.size,
      scanState: a.scanState,
    })),
    inboundSecurity: security ? toInboundSecurity(security, m.attachmentsScanState ?? null) : undefined,
    extracted: m.extracted ? toExtracted(extractedOf(m.extracted, m.text)) : undefined,
    cc: (m.cc ?? []).map(toAddress),
  });
}

/** Sender authentication of a message stored before it existed, or with INBOUND_AUTHENTICATION=off. */
const NOT_EVALUATED: StoredAuthentication = {
  spf: "not_evaluated",
  dkim: "not_evaluated",
  dmarc: "not_evaluated",
  arc: "not_evaluated",
  fromDomain: null,
  senderAuthenticated: false,
  dkimDomains: [],
  dmarcPolicy: null,
  replyToDiverges: false,
};

function toInboundSecurity(security: StoredInboundSecurity, attachmentsScanState: string | null) {
  const { replyToDiverges, fromDomain, dmarcPolicy, ...authentication } = security.authentication ?? NOT_EVALUATED;
  return {
    trust: "untrusted",
    smtp: { remoteIp: security.remoteIp, helo: security.helo, tls: { encrypted: security.tls.encrypted, protocol: security.tls.protocol ?? undefined, cipher: security.tls.cipher ?? undefined } },
    authentication: { ...authentication, fromDomain: fromDomain ?? undefined, dmarcPolicy: dmarcPolicy ?? undefined },
    attachments: attachmentsScanState ?? "clean",
    replyToDiverges,
    senderRule: security.senderRule ?? "none",
  };
}

/** Messages stored before the safety analysis have no safeText, warnings or risk: they are left absent. */
function toExtracted(e: Extracted) {
  return {
    replyText: e.replyText,
    codes: [...e.codes],
    links: [...e.links],
    safeText: e.safeText,
    warnings: (e.warnings ?? []).map((w) => ({ ...w, offset: w.offset ?? undefined, domain: w.domain ?? undefined, imitates: w.imitates ?? undefined })),
    risk: e.risk,
  };
}

export function toSenderRules(rules: AppliedSenderRules): SenderRules {
  return create(SenderRulesSchema, {
    allow: [...rules.allow],
    block: [...rules.block],
    requireAuthenticated: rules.requireAuthenticated,
    source: rules.source,
    updatedAt: rules.updatedAt ? timestampFromDate(rules.updatedAt) : undefined,
  });
}

/**
 * An event of the log from its stored payload (the webhook's), with what a stream adds: whether the sender of a
 * message.received event authenticated (null for events stored before sender authentication: left out).
 */
export function toEvent(payload: string, senderAuthenticated: boolean | null): Event {
  const event = JSON.parse(payload) as EventPayload;
  return create(EventSchema, {
    ...event,
    data: { ...event.data, senderAuthenticated: senderAuthenticated ?? undefined },
    createdAt: timestampFromDate(new Date(event.createdAt)),
  });
}

export function toSubmission({ submission: s, recipients }: SubmissionView): Submission {
  return create(SubmissionSchema, {
    id: s.id,
    from: toAddress(s.from),
    recipients: recipients.map((r) => ({
      email: r.email,
      status: r.status,
      response: r.response ?? undefined,
      updatedAt: timestampFromDate(r.updatedAt),
      kind: r.kind,
    })),
    subject: s.subject,
    metadata: s.metadata as JsonObject,
    status: s.status,
    queueId: s.queueId ?? undefined,
    response: s.response ?? undefined,
    failureCode: s.failureCode ?? undefined,
    createdAt: timestampFromDate(s.createdAt),
    updatedAt: timestampFromDate(s.updatedAt),
    heldReason: s.heldReason ?? undefined,
  });
}

/** The answer of a send, reply or forward from an inbox: the stored message with its attachments, and its submission. */
export function toSendResult(result: SendResult) {
  return { message: toMessage({ message: result.message!, attachments: result.attachments }), submission: toSubmission(result.submission), replayed: result.replayed };
}

/** A send's files as the domain takes them (the contract's oneof source, required by validation). */
export function fromOutgoingAttachments(attachments: readonly OutgoingAttachment[]): AttachmentInput[] {
  return attachments.map((a, i) => {
    const s = a.source;
    const source: AttachmentSource | undefined =
      s.case === "contentBase64"
        ? { kind: "inline", content: s.value }
        : s.case === "uploadId"
          ? { kind: "upload", uploadId: s.value }
          : s.case === "url"
            ? { kind: "url", url: s.value }
            : undefined;
    if (!source) throw new Error(`attachments[${i}] has no source: validation lets none through`);
    return { source, filename: a.filename, contentType: a.contentType, contentId: a.contentId, disposition: a.disposition as AttachmentInput["disposition"] };
  });
}

/** The summary fields, shared by ThreadSummary and the thread read (GetThreadResponse). */
export function threadSummaryFields(t: ThreadRow) {
  return {
    id: t.id,
    inboxId: t.inboxId,
    subject: t.subject,
    participants: t.participants,
    messageCount: t.messageCount,
    lastMessageAt: timestampFromDate(t.lastMessageAt),
  };
}

export function toThreadSummary(t: ThreadRow): ThreadSummary {
  return create(ThreadSummarySchema, threadSummaryFields(t));
}

function webhookEndpointFields(row: WebhookEndpointRow) {
  return {
    id: row.id,
    url: row.url,
    events: [...row.events],
    status: row.status,
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  };
}

/** An endpoint as listed: never its signing secret. */
export function toWebhookEndpoint(row: WebhookEndpointRow): WebhookEndpoint {
  return create(WebhookEndpointSchema, webhookEndpointFields(row));
}

/** A created (or exactly replayed) endpoint: the one answer that carries the signing secret. */
export function toCreateWebhookResponse(row: WebhookEndpointRow, replayed: boolean): CreateWebhookResponse {
  return create(CreateWebhookResponseSchema, {
    ...webhookEndpointFields(row),
    signingSecret: row.signingSecret,
    signingSecretReplayUntil: timestampFromDate(row.signingSecretReplayUntil),
    replayed,
  });
}

export function toDomain(row: CustomerDomainRow, records: DomainRecordSettings, now = new Date()): Domain {
  return create(DomainSchema, {
    id: row.id,
    domain: row.domain,
    dnsRecords: recordsToPublish(row, records),
    capabilities: { inbound: isEnabled(row.inbound, now), outbound: isEnabled(row.outbound, now) },
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  });
}

function toDomainCheck(check: Check): DomainCheck {
  return create(DomainCheckSchema, { ...check, found: [...check.found], gates: [...check.gates] });
}

export function toVerifyDomainResponse(v: Verification): VerifyDomainResponse {
  return create(VerifyDomainResponseSchema, {
    domain: v.domain.domain,
    checks: v.checks.map(toDomainCheck),
    capabilities: { inbound: isEnabled(v.domain.inbound, v.checkedAt), outbound: isEnabled(v.domain.outbound, v.checkedAt) },
    checkedAt: timestampFromDate(v.checkedAt),
  });
}

function toCapabilityState(record: CapabilityRecord, now: Date): CapabilityState {
  const at = (iso: string | null) => (iso === null ? undefined : timestampFromDate(new Date(iso)));
  return create(CapabilityStateSchema, {
    enabled: isEnabled(record, now),
    state: record.state,
    lastCheckedAt: at(record.lastCheckedAt),
    lastSuccessAt: at(record.lastSuccessAt),
    graceUntil: at(record.graceUntil),
  });
}

export function toDomainTraffic(t: Traffic, now = new Date()): DomainTraffic {
  return create(DomainTrafficSchema, {
    domainId: t.domain.id,
    domain: t.domain.domain,
    inbound: toCapabilityState(t.domain.inbound, now),
    outbound: toCapabilityState(t.domain.outbound, now),
    inboundMessages24h: t.inboundMessages24h,
    outboundMessages24h: t.outboundMessages24h,
    lastChecks: ((t.domain.lastChecks ?? []) as Check[]).map(toDomainCheck),
  });
}

export function toEmailValidation(r: ValidationResult): EmailValidation {
  return create(EmailValidationSchema, {
    email: r.email,
    normalized: r.normalized ?? undefined,
    result: r.result,
    reason: r.reason,
    checks: r.checks,
    suggestion: r.suggestion ?? undefined,
  });
}
