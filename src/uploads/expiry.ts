// Expired uploads go: once a minute the worker's periodic jobs delete the uploads past their expiresAt (UPLOAD_TTL
// after they were made), their bytes with them. Until then an expired upload is already invisible: reads, sends and
// the storage count all compare expiresAt with the time of the request.
import type { Database } from "../db/database.js";
import { deleteExpiredUpload, expiredUploadIds } from "../db/tables/uploads.js";
import type { Reconciler } from "../jobs/periodic-jobs.js";

/** Uploads deleted per round, oldest first; the next round takes the rest. */
const BATCH = 1000;

/**
 * The Reconciler shape (a round finds the rows due and handles each; one that fails is tried again next round), whose
 * "start" deletes an expired upload.
 */
export function uploadExpiryReconciler(db: Database, now: () => Date = () => new Date()): Reconciler<string> {
  return {
    name: "upload expiry",
    stranded: () => expiredUploadIds(db.sql, now(), BATCH),
    start: async (id) => {
      await deleteExpiredUpload(db.sql, id, now());
    },
  };
}
