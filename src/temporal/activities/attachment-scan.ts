// Activities of the attachment scan. Each loads what it needs by id in its own EntityManager (bytes never travel
// through workflow history) and writes a verdict only over `unscanned`, so a retried or repeated run changes nothing.
import { Context } from "@temporalio/activity";
import { ApplicationFailure, ApplicationFailureCategory } from "@temporalio/common";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Database } from "../../db/database.js";
import { Attachment, Message } from "../../db/entities/index.js";
import { isScanState, worstScanState, type ScanState, type ScanVerdict, type Scanner } from "../../scanning/scanner.js";

/** The failure type of a scanner error verdict that is retried rather than stored. */
const SCAN_ERROR_FAILURE = "AttachmentScanError";

/** How often a running scan tells Temporal its worker is alive (the workflow's heartbeat timeout is longer). */
const HEARTBEAT_MS = 10_000;
/** SCAN_ERROR_RETRY_INITIAL_MS's default: with the coefficient, about 26 s of patience over 4 attempts (2, 6, 18 s). */
export const SCAN_ERROR_RETRY_INITIAL_MS = 2000;
const SCAN_ERROR_RETRY_COEFFICIENT = 3;

export function createAttachmentScanActivities(deps: { db: Database; scanner: Scanner; scanErrorRetryInitialMs?: number }) {
  const retryInitialMs = deps.scanErrorRetryInitialMs ?? SCAN_ERROR_RETRY_INITIAL_MS;
  return {
    /** The message's attachments still waiting for a verdict, in order. */
    async listUnscannedAttachments(organizationId: string, messageId: string): Promise<string[]> {
      const rows = await deps.db
        .fork()
        .find(Attachment, { organization: organizationId, messageId, scanState: "unscanned" }, { fields: ["id"], orderBy: { position: "asc" } });
      return rows.map((row) => row.id);
    },

    /**
     * Scans one attachment and stores the verdict; resolves to the stored state, or null when the attachment is gone
     * (its message was deleted). An error verdict before attempt `errorAttempts` fails the activity instead, so a
     * briefly unavailable scanner gets another chance before `error` is stored.
     */
    async scanAttachment(organizationId: string, attachmentId: string, errorAttempts: number): Promise<ScanState | null> {
      const em = deps.db.fork();
      const attachment = await em.findOne(Attachment, { id: attachmentId, organization: organizationId }, { populate: ["content"] });
      if (!attachment) return null;
      if (attachment.scanState !== "unscanned") return storedState(attachment.scanState);
      const context = Context.current();
      const heartbeat = setInterval(() => context.heartbeat(), HEARTBEAT_MS);
      let verdict: ScanVerdict;
      try {
        verdict = await deps.scanner.scan(attachment.content, { filename: attachment.filename, contentType: attachment.contentType });
      } finally {
        clearInterval(heartbeat);
      }
      if (verdict.state === "error" && context.info.attempt < errorAttempts) {
        // Benign: an expected retry, logged at debug by the worker; the stored verdict and the UI tell the rest.
        // The wait is this worker's setting, not the workflow's retry policy: a workflow's code and history stay
        // the same whatever a deployment configures (the policy still spaces retries of lost workers and outages).
        throw ApplicationFailure.create({
          message: verdict.reason,
          type: SCAN_ERROR_FAILURE,
          category: ApplicationFailureCategory.BENIGN,
          nextRetryDelay: retryInitialMs * SCAN_ERROR_RETRY_COEFFICIENT ** (context.info.attempt - 1),
        });
      }
      return storeVerdict(em, organizationId, attachmentId, verdict);
    },

    /** Stores `error` for an attachment whose scan never completed: its retries are spent. */
    async recordScanFailure(organizationId: string, attachmentId: string, reason: string): Promise<ScanState | null> {
      return storeVerdict(deps.db.fork(), organizationId, attachmentId, { state: "error", reason });
    },

    /** Sets the message's attachments scan state to the worst of its attachments' states; null when it has none. */
    async recordMessageScanState(organizationId: string, messageId: string): Promise<ScanState | null> {
      const em = deps.db.fork();
      const rows = await em.find(Attachment, { organization: organizationId, messageId }, { fields: ["scanState"] });
      if (rows.length === 0) return null;
      const state = worstScanState(rows.map((row) => storedState(row.scanState)));
      await em.nativeUpdate(Message, { id: messageId, organization: organizationId }, { attachmentsScanState: state, updatedAt: new Date() });
      return state;
    },
  };
}

export type AttachmentScanActivities = ReturnType<typeof createAttachmentScanActivities>;

async function storeVerdict(em: EntityManager, organizationId: string, attachmentId: string, verdict: ScanVerdict): Promise<ScanState | null> {
  const detail = verdict.state === "infected" ? verdict.finding : verdict.state === "error" ? verdict.reason : null;
  const updated = await em.nativeUpdate(
    Attachment,
    { id: attachmentId, organization: organizationId, scanState: "unscanned" },
    { scanState: verdict.state, scanDetail: detail, scannedAt: new Date() },
  );
  if (updated > 0) return verdict.state;
  // Another run stored a verdict first (or the attachment is gone): that verdict stands.
  const stored = await em.findOne(Attachment, { id: attachmentId, organization: organizationId }, { fields: ["scanState"] });
  return stored ? storedState(stored.scanState) : null;
}

/** The column is a string; anything unknown is treated as not scanned, which never lets it download. */
function storedState(value: string): ScanState {
  return isScanState(value) ? value : "unscanned";
}
