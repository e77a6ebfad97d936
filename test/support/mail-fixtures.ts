// Stored mail for read tests, written through the ORM as inbound processing would store it. Tests of the SMTP path
// itself deliver real mail instead.
import { Attachment, Message, Organization, Thread } from "../../src/db/entities/index.js";
import type { Database } from "../../src/db/database.js";
import { newId } from "../../src/ids.js";

export interface FixtureMessage {
  readonly organizationId: string;
  readonly inboxId: string;
  readonly threadId?: string;
  readonly subject?: string;
  readonly text?: string;
  readonly html?: string;
  readonly from?: string;
  readonly replyTo?: { email: string; name?: string };
  /** The To and Cc recipients as received (To: agent@agents.test, no Cc when not given). */
  readonly to?: readonly { email: string; name?: string }[];
  readonly cc?: readonly { email: string; name?: string }[];
  readonly at?: Date;
  readonly attachments?: readonly { filename: string; content: string | Buffer; scanState: string; contentType?: string }[];
}

export async function storeInbound(db: Database, fixture: FixtureMessage): Promise<{ messageId: string; threadId: string; attachmentIds: string[] }> {
  const em = db.fork();
  const org = em.getReference(Organization, fixture.organizationId);
  const at = fixture.at ?? new Date();
  const from = { email: fixture.from ?? "sender@example.net", name: "Sender" };
  let thread = fixture.threadId ? await em.findOneOrFail(Thread, fixture.threadId) : null;
  if (!thread) {
    thread = em.create(Thread, {
      id: newId("thr"),
      organization: org,
      inboxId: fixture.inboxId,
      subject: fixture.subject ?? "Hello",
      participants: [from.email],
      messageCount: 0,
      lastMessageAt: at,
      createdAt: at,
      updatedAt: at,
    });
  }
  thread.messageCount += 1;
  thread.lastMessageAt = at;
  const messageId = newId("msg");
  em.create(Message, {
    id: messageId,
    organization: org,
    inboxId: fixture.inboxId,
    threadId: thread.id,
    direction: "inbound",
    internetMessageId: `<${messageId}@example.net>`,
    inReplyTo: null,
    references: [],
    from,
    to: [...(fixture.to ?? [{ email: "agent@agents.test" }])],
    cc: [...(fixture.cc ?? [])],
    replyTo: fixture.replyTo ?? null,
    subject: fixture.subject ?? "Hello",
    text: fixture.text ?? "Hi there",
    html: fixture.html ?? null,
    metadata: {},
    deliveryStatus: "received",
    submissionId: null,
    failureCode: null,
    inboundSecurity: { remoteIp: "192.0.2.7", helo: "mx.example.net", tls: { encrypted: true, protocol: "TLSv1.3", cipher: "TLS_AES_256_GCM_SHA384" } },
    attachmentsScanState: fixture.attachments?.length ? "unscanned" : "clean",
    rawId: null,
    parseProblem: null,
    createdAt: at,
    updatedAt: at,
  });
  const hex = messageId.slice(4);
  const attachmentIds = (fixture.attachments ?? []).map((a, i) => {
    const id = `att_${hex}_${i + 1}`;
    const content = Buffer.from(a.content);
    em.create(Attachment, {
      id,
      organization: org,
      inboxId: fixture.inboxId,
      messageId,
      position: i + 1,
      filename: a.filename,
      contentType: a.contentType ?? "application/octet-stream",
      size: content.length,
      content,
      scanState: a.scanState,
      scanDetail: null,
      scannedAt: null,
      createdAt: at,
    });
    return id;
  });
  await em.flush();
  return { messageId, threadId: thread.id, attachmentIds };
}
