// Registration of every proto service in one place.
import type { DescService } from "@bufbuild/protobuf";
import { createServiceImplSpec, type ServiceImpl, type ServiceImplSpec } from "@connectrpc/connect";
import { AccountService } from "../../gen/mailbox/v1/account_service_pb.js";
import { DeliveryService } from "../../gen/mailbox/v1/delivery_service_pb.js";
import { DomainService } from "../../gen/mailbox/v1/domain_service_pb.js";
import { EventService } from "../../gen/mailbox/v1/event_service_pb.js";
import { InboxService } from "../../gen/mailbox/v1/inbox_service_pb.js";
import { MessageService } from "../../gen/mailbox/v1/message_service_pb.js";
import { SenderRuleService } from "../../gen/mailbox/v1/sender_rule_service_pb.js";
import { ThreadService } from "../../gen/mailbox/v1/thread_service_pb.js";
import { UploadService } from "../../gen/mailbox/v1/upload_service_pb.js";
import { ValidationService } from "../../gen/mailbox/v1/validation_service_pb.js";
import { WebhookService } from "../../gen/mailbox/v1/webhook_service_pb.js";
import type { Config } from "../config.js";
import type { Domains } from "../domains/domains.js";
import type { EventStreams } from "../events/stream.js";
import type { EmailValidator } from "../validation/validator.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { Messages } from "../mailbox/messages.js";
import type { Threads } from "../mailbox/threads.js";
import type { MessageWaits } from "../mailbox/wait.js";
import type { OutboundDeps } from "../outbound/outbound.js";
import type { SenderRules } from "../senders/sender-rules.js";
import type { UploadDeps } from "../uploads/uploads.js";
import type { WebhookEndpoints } from "../webhooks/endpoints.js";
import { createAccountService } from "./account-service.js";
import { createDeliveryService, type DeliveryServiceDeps } from "./delivery-service.js";
import { createDomainService } from "./domain-service.js";
import { createEventService } from "./event-service.js";
import { createInboxService } from "./inbox-service.js";
import { createMessageService } from "./message-service.js";
import { createSenderRuleService } from "./sender-rule-service.js";
import { createThreadService } from "./thread-service.js";
import { createUploadService } from "./upload-service.js";
import { createValidationService } from "./validation-service.js";
import { createWebhookService } from "./webhook-service.js";

/** Every service of the contract, in the order the route table and the OpenAPI document list them. */
export const CONTRACT_SERVICES = [
  AccountService,
  ValidationService,
  InboxService,
  ThreadService,
  MessageService,
  SenderRuleService,
  UploadService,
  DeliveryService,
  DomainService,
  WebhookService,
  EventService,
] as const;

export interface ServiceDeps extends DeliveryServiceDeps {
  readonly config: Config;
  readonly inboxes: Inboxes;
  readonly threads: Threads;
  readonly messages: Messages;
  readonly waits: MessageWaits;
  readonly streams: EventStreams;
  readonly senderRules: SenderRules;
  readonly outbound: OutboundDeps;
  readonly webhooks: WebhookEndpoints;
  readonly domains: Domains;
  readonly validator: EmailValidator;
  /** Settings, size limit and scanner of uploads; createApiHandler makes them from the configuration when absent. */
  readonly uploads?: UploadDeps;
}

/**
 * Every service of the contract with its implementation, as Connect implementation specs: the router serves them to
 * Connect, gRPC and gRPC-Web, and the JSON face invokes the very same specs. An operation marked
 * `(mailbox.v1.method).unimplemented` and left out of its implementation answers Connect's `unimplemented`,
 * rendered as 501 not_implemented.
 */
export function createServiceSpecs(deps: ServiceDeps & { readonly uploads: UploadDeps }): ServiceImplSpec[] {
  return [
    spec(AccountService, createAccountService(deps)),
    spec(ValidationService, createValidationService(deps)),
    spec(InboxService, createInboxService(deps)),
    spec(ThreadService, createThreadService(deps)),
    spec(MessageService, createMessageService(deps)),
    spec(SenderRuleService, createSenderRuleService(deps)),
    spec(UploadService, createUploadService(deps)),
    spec(DeliveryService, createDeliveryService(deps)),
    spec(DomainService, createDomainService(deps)),
    spec(WebhookService, createWebhookService(deps)),
    spec(EventService, createEventService(deps)),
  ];
}

// Ties each implementation's type to its service (createServiceImplSpec cannot infer it from the descriptor).
function spec<S extends DescService>(service: S, impl: Partial<ServiceImpl<S>>): ServiceImplSpec {
  return createServiceImplSpec<S>(service, impl);
}
