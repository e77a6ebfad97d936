// Entity → proto mappers: the one place where stored rows become contract messages.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate, ListValueSchema, type ListValue } from "@bufbuild/protobuf/wkt";
import { GetMeResponseSchema, type GetMeResponse, type PlatformLimits } from "../../gen/mailbox/v1/account_service_pb.js";
import { InboxSchema, type Inbox } from "../../gen/mailbox/v1/resources_pb.js";
import type { AccessProfile } from "../accounts/profile.js";
import type { InboxRow } from "../db/entities/inbox.js";

export function toInbox(row: InboxRow): Inbox {
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
    },
    managedStarter: profile.managedStarter,
    platformLimits,
  });
}
