// Everything bundled into the Temporal workflow sandbox. Only deterministic code belongs under workflows/.
export { inboxPurge } from "./inbox-purge.js";
export { attachmentScan } from "./attachment-scan.js";
export { webhookDelivery } from "./webhook-delivery.js";
export { domainVerification } from "./domain-verification.js";
export { delivery } from "./delivery.js";
