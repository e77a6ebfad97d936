import { ApiKey } from "./api-key.js";
import { Attachment } from "./attachment.js";
import { CustomerDomain } from "./customer-domain.js";
import { Inbox } from "./inbox.js";
import { InboundRawMessage } from "./inbound-raw-message.js";
import { Message } from "./message.js";
import { Organization } from "./organization.js";
import { RequestWindow } from "./request-window.js";
import { Thread } from "./thread.js";
import { WebhookDelivery } from "./webhook-delivery.js";
import { WebhookEndpoint } from "./webhook-endpoint.js";

export { ApiKey, Attachment, CustomerDomain, Inbox, InboundRawMessage, Message, Organization, RequestWindow, Thread, WebhookDelivery, WebhookEndpoint };
export const entities = [
  Organization,
  ApiKey,
  Inbox,
  RequestWindow,
  InboundRawMessage,
  Thread,
  Message,
  Attachment,
  WebhookEndpoint,
  WebhookDelivery,
  CustomerDomain,
];
