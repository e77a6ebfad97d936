// Registration of every proto service in one place. Services whose operations later work builds are registered
// with no implementation: Connect answers them `unimplemented`, which both faces render as 501 not_implemented.
import type { ConnectRouter } from "@connectrpc/connect";
import { AccountService } from "../../gen/mailbox/v1/account_service_pb.js";
import { DeliveryService } from "../../gen/mailbox/v1/delivery_service_pb.js";
import { DomainService } from "../../gen/mailbox/v1/domain_service_pb.js";
import { InboxService } from "../../gen/mailbox/v1/inbox_service_pb.js";
import { MessageService } from "../../gen/mailbox/v1/message_service_pb.js";
import { ThreadService } from "../../gen/mailbox/v1/thread_service_pb.js";
import { ValidationService } from "../../gen/mailbox/v1/validation_service_pb.js";
import { WebhookService } from "../../gen/mailbox/v1/webhook_service_pb.js";
import type { Config } from "../config.js";
import type { Domains } from "../domains/domains.js";
import type { EmailValidator } from "../validation/validator.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { Messages } from "../mailbox/messages.js";
import type { Threads } from "../mailbox/threads.js";
import type { WebhookEndpoints } from "../webhooks/endpoints.js";
import { createAccountService } from "./account-service.js";
import { createDomainService } from "./domain-service.js";
import { createInboxService } from "./inbox-service.js";
import { createMessageService } from "./message-service.js";
import { createThreadService } from "./thread-service.js";
import { createValidationService } from "./validation-service.js";
import { createWebhookService } from "./webhook-service.js";

/** Every service of the contract, in the order the route table and the OpenAPI document list them. */
export const CONTRACT_SERVICES = [
  AccountService,
  ValidationService,
  InboxService,
  ThreadService,
  MessageService,
  DeliveryService,
  DomainService,
  WebhookService,
] as const;

export interface ServiceDeps {
  readonly config: Config;
  readonly inboxes: Inboxes;
  readonly threads: Threads;
  readonly messages: Messages;
  readonly webhooks: WebhookEndpoints;
  readonly domains: Domains;
  readonly validator: EmailValidator;
}

export function registerServices(deps: ServiceDeps): (router: ConnectRouter) => void {
  const account = createAccountService(deps);
  const inbox = createInboxService(deps);
  const thread = createThreadService(deps);
  const message = createMessageService(deps);
  const webhook = createWebhookService(deps);
  const domain = createDomainService(deps);
  const validation = createValidationService(deps);
  return (router) => {
    router.service(AccountService, account);
    router.service(InboxService, inbox);
    router.service(ValidationService, validation);
    router.service(ThreadService, thread);
    router.service(MessageService, message);
    router.service(DeliveryService, {});
    router.service(DomainService, domain);
    router.service(WebhookService, webhook);
  };
}
