import { ApiKey } from "./api-key.js";
import { Attachment } from "./attachment.js";
import { Complaint } from "./complaint.js";
import { Contact } from "./contact.js";
import { CustomerDomain } from "./customer-domain.js";
import { Inbox } from "./inbox.js";
import { IdempotencyRecord } from "./idempotency-record.js";
import { InboundRawChunk } from "./inbound-raw-chunk.js";
import { InboundRawMessage } from "./inbound-raw-message.js";
import { Message } from "./message.js";
import { Organization } from "./organization.js";
import { RequestWindow } from "./request-window.js";
import { SendWindow } from "./send-window.js";
import { SenderRule } from "./sender-rule.js";
import { StoredEvent } from "./stored-event.js";
import { Submission } from "./submission.js";
import { SubmissionRecipient } from "./submission-recipient.js";
import { Suppression } from "./suppression.js";
import { Thread } from "./thread.js";
import { Upload } from "./upload.js";
import { UploadChunk } from "./upload-chunk.js";
import { WebhookDelivery } from "./webhook-delivery.js";
import { WebhookEndpoint } from "./webhook-endpoint.js";

export {
  ApiKey,
  Attachment,
  Complaint,
  Contact,
  CustomerDomain,
  IdempotencyRecord,
  Inbox,
  InboundRawChunk,
  InboundRawMessage,
  Message,
  Organization,
  RequestWindow,
  SendWindow,
  SenderRule,
  StoredEvent,
  Submission,
  SubmissionRecipient,
  Suppression,
  Thread,
  Upload,
  UploadChunk,
  WebhookDelivery,
  WebhookEndpoint,
};
export const entities = [
  Organization,
  ApiKey,
  Inbox,
  RequestWindow,
  InboundRawMessage,
  InboundRawChunk,
  Thread,
  Message,
  Contact,
  Attachment,
  WebhookEndpoint,
  WebhookDelivery,
  CustomerDomain,
  Submission,
  SubmissionRecipient,
  IdempotencyRecord,
  Suppression,
  Complaint,
  SendWindow,
  StoredEvent,
  Upload,
  UploadChunk,
  SenderRule,
];
