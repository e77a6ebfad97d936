// Outbound rows written straight into the database, for tests of what is read from them (metrics, suppressions,
// complaints, feedback reports) without sending anything.
import { randomUUID } from "node:crypto";
import { Complaint, Suppression } from "../../src/db/entities/index.js";
import type { Database } from "../../src/db/database.js";
import { insertSubmissions } from "../../src/db/tables/submissions.js";

export interface SeededRecipient {
  readonly email?: string;
  /** pending, queued, deferred, delivered, bounced or failed. */
  readonly status: string;
  /** Milliseconds after the submission's creation that the recipient's server accepted it (delivered only). */
  readonly latencyMs?: number;
}

export async function seedSubmission(
  db: Database,
  organizationId: string,
  options: { createdAt?: Date; internetMessageId?: string; recipients: readonly SeededRecipient[] },
): Promise<{ id: string; internetMessageId: string }> {
  const id = randomUUID();
  const createdAt = options.createdAt ?? new Date();
  const internetMessageId = options.internetMessageId ?? `<${randomUUID()}@agents.test>`;
  await db.sql.transaction((tx) =>
    insertSubmissions(
      tx,
      [
        {
          id,
          organizationId,
          inboxId: null,
          messageId: null,
          from: { email: "sender@agents.test" },
          subject: "seeded",
          metadata: {},
          internetMessageId,
          mime: Buffer.from("Subject: seeded\r\n\r\nseeded\r\n"),
          status: "pending",
          queueId: null,
          // No worker's queue: seeded rows are read, never delivered.
          taskQueue: "seeded-rows",
          response: null,
          failureCode: null,
          heldReason: null,
          createdByKeyId: null,
          decidedAt: null,
          decidedByKeyId: null,
          createdAt,
          updatedAt: createdAt,
        },
      ],
      options.recipients.map((r, position) => {
        const email = r.email ?? `r${position}-${randomUUID().slice(0, 8)}@example.com`;
        return {
          id: randomUUID(),
          organizationId,
          submissionId: id,
          position,
          email,
          name: null,
          domain: email.slice(email.lastIndexOf("@") + 1),
          kind: "to" as const,
          status: r.status,
          response: null,
          failureCode: null,
          attempts: 1,
          deliveredAt: r.latencyMs === undefined ? null : new Date(createdAt.getTime() + r.latencyMs),
          updatedAt: createdAt,
        };
      }),
    ),
  );
  return { id, internetMessageId };
}

export async function seedSuppression(
  db: Database,
  organizationId: string,
  row: { email: string; reason?: string; detail?: string | null; createdAt?: Date },
): Promise<void> {
  const em = db.fork();
  em.create(Suppression, {
    id: randomUUID(),
    organization: organizationId,
    email: row.email,
    reason: row.reason ?? "manual",
    detail: row.detail ?? null,
    createdAt: row.createdAt ?? new Date(),
  });
  await em.flush();
}

export async function seedComplaint(
  db: Database,
  organizationId: string,
  row: { email?: string; createdAt?: Date; submissionId?: string | null; userAgent?: string | null } = {},
): Promise<string> {
  const em = db.fork();
  const id = randomUUID();
  em.create(Complaint, {
    id,
    organization: organizationId,
    email: row.email ?? `c-${randomUUID().slice(0, 8)}@example.com`,
    feedbackType: "abuse",
    submissionId: row.submissionId ?? null,
    userAgent: row.userAgent ?? null,
    createdAt: row.createdAt ?? new Date(),
  });
  await em.flush();
  return id;
}
