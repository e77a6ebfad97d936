// Durable acceptance: the raw message is committed (one transaction) before the server answers 250, so a crash
// right after the 250 loses nothing; processing picks the row up (see processor.ts and sweeper.ts).
import type { Database } from "../db/database.js";
import { InboundRawMessage } from "../db/entities/index.js";
import { newUuid } from "../ids.js";
import type { AdmittedRecipient } from "./admission.js";

/** What is known of the SMTP session a message came in (spec: inboundSecurity.smtp). */
export interface SessionFacts {
  readonly remoteIp: string;
  /** The name the client gave with HELO/EHLO. */
  readonly helo: string;
  /** Null for a cleartext session. */
  readonly tls: { readonly protocol: string; readonly cipher: string } | null;
}

export interface ReceivedMessage {
  /** The envelope sender; "" for the null sender of bounces. */
  readonly mailFrom: string;
  readonly recipients: readonly AdmittedRecipient[];
  readonly session: SessionFacts;
  readonly raw: Buffer;
}

/** Commits the raw message as pending; returns its id. */
export async function storeRawMessage(db: Database, message: ReceivedMessage): Promise<string> {
  const em = db.fork();
  const row = em.create(InboundRawMessage, {
    id: newUuid(),
    receivedAt: new Date(),
    mailFrom: message.mailFrom,
    rcptTo: message.recipients.map((r) => r.address),
    inboxIds: message.recipients.map((r) => r.inboxId),
    remoteIp: message.session.remoteIp,
    helo: message.session.helo,
    tlsProtocol: message.session.tls?.protocol ?? null,
    tlsCipher: message.session.tls?.cipher ?? null,
    size: message.raw.length,
    raw: message.raw,
    status: "pending",
    attempts: 0,
    error: null,
    processedAt: null,
  });
  await em.flush();
  return row.id;
}
