// Durable acceptance: the raw message is committed (one transaction) before the server answers 250, so a crash
// right after the 250 loses nothing; processing picks the row up (see processor.ts and sweeper.ts).
import type { Database } from "../db/database.js";
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

/** Commits the raw message as pending (one statement, the bytes bound as binary); returns its id. */
export async function storeRawMessage(db: Database, message: ReceivedMessage): Promise<string> {
  const id = newUuid();
  await db.sql.query(
    `insert into inbound_raw_messages
       (id, received_at, mail_from, rcpt_to, inbox_ids, remote_ip, helo, tls_protocol, tls_cipher, size, raw, status, attempts)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', 0)`,
    [
      id,
      new Date(),
      message.mailFrom,
      message.recipients.map((r) => r.address),
      message.recipients.map((r) => r.inboxId),
      message.session.remoteIp,
      message.session.helo,
      message.session.tls?.protocol ?? null,
      message.session.tls?.cipher ?? null,
      message.raw.length,
      message.raw,
    ],
  );
  return id;
}
