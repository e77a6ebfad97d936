// Scans the attachments of one stored message, one activity each, then sets the message's state to the worst verdict.
// Only ids pass through here: activities load the bytes. A scan that cannot finish is stored as error, never clean.
import { ActivityFailure, isCancellation, proxyActivities } from "@temporalio/workflow";
import type { AttachmentScanActivities } from "../src/temporal/activities/attachment-scan.js";
import type { AttachmentScanArgs, AttachmentScanResult } from "./types.js";

/**
 * Attempts a scanner error verdict gets before `error` is stored. The activity spaces them itself, by the worker's
 * SCAN_ERROR_RETRY_INITIAL_MS (by default 2 s, 6 s, 18 s apart: about 26 s of patience), so the setting never
 * changes this workflow's code or its history.
 */
const SCAN_ERROR_ATTEMPTS = 4;
/** Every scan attempt, scanner errors and lost workers or database outages alike; once spent, `error` is stored. */
const SCAN_RETRY = { initialInterval: "2s", backoffCoefficient: 3, maximumInterval: "1m", maximumAttempts: 10 } as const;
/** Database work is idempotent and retried until it succeeds; the backoff rides out a database restart. */
const RECORD_RETRY = { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "1m" } as const;

/** A scan may take SCAN_TIMEOUT_MS (at most 10 minutes); the heartbeat notices a lost worker long before that. */
const scans = proxyActivities<AttachmentScanActivities>({ startToCloseTimeout: "11m", heartbeatTimeout: "1m", retry: SCAN_RETRY });
const records = proxyActivities<AttachmentScanActivities>({ startToCloseTimeout: "1m", retry: RECORD_RETRY });

export async function attachmentScan(args: AttachmentScanArgs): Promise<AttachmentScanResult> {
  const attachmentIds = await records.listUnscannedAttachments(args.organizationId, args.messageId);
  for (const attachmentId of attachmentIds) {
    try {
      await scans.scanAttachment(args.organizationId, attachmentId, SCAN_ERROR_ATTEMPTS);
    } catch (e) {
      if (isCancellation(e) || !(e instanceof ActivityFailure)) throw e;
      await records.recordScanFailure(args.organizationId, attachmentId, e.cause?.message ?? e.message);
    }
  }
  const state = await records.recordMessageScanState(args.organizationId, args.messageId);
  return { scanned: attachmentIds.length, state };
}
