// Starts the durable scan of a stored message's attachments: one workflow per message, started after the message
// commits, under a business key so that repeated starts (inbound retries, the reconciler) join the running scan.
import type { Client } from "@temporalio/client";
import type { AttachmentScanStarter } from "../inbound/ports.js";
import { inboxKey, organizationKey } from "../temporal/client.js";
import type { attachmentScan } from "../../workflows/attachment-scan.js";

/** The business key of a message's scan, findable in the Temporal UI as attachment-scan/<messageId>. */
export function attachmentScanWorkflowId(messageId: string): string {
  return `attachment-scan/${messageId}`;
}

export function createAttachmentScanStarter(client: Client, taskQueue: string): AttachmentScanStarter {
  return {
    async start({ messageId, organizationId, inboxId }) {
      await client.workflow.start<typeof attachmentScan>("attachmentScan", {
        workflowId: attachmentScanWorkflowId(messageId),
        taskQueue,
        args: [{ organizationId, inboxId, messageId }],
        workflowIdConflictPolicy: "USE_EXISTING",
        typedSearchAttributes: [
          { key: organizationKey, value: organizationId },
          { key: inboxKey, value: inboxId },
        ],
      });
    },
  };
}
