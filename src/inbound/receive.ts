// Durable acceptance: the raw message is committed before the server answers 250, so a crash right after the 250
// loses nothing; processing picks the row up (see processor.ts and sweeper.ts).
//
// Commits are grouped (src/db/group-commit.ts): messages whose DATA ends while an insert is under way go together
// in the next multi-row INSERT; each is answered 250 only after its group's commit, and a failed group answers each
// of its messages 451, so the sender retries.
import type { Database } from "../db/database.js";
import { groupCommit, type GroupCommitOptions } from "../db/group-commit.js";
import { insertRows } from "../db/values.js";
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

export interface RawMessageStore {
  /** Commits the raw message as pending (the bytes bound as binary); resolves with its id once committed. */
  store(message: ReceivedMessage): Promise<string>;
}

const GROUPING: GroupCommitOptions<Row> = {
  maxGroup: 100,
  maxInFlight: 2,
  maxWeight: 16 * 1024 * 1024,
  weightOf: (row) => row.message.raw.length,
};

interface Row {
  readonly id: string;
  readonly receivedAt: Date;
  readonly message: ReceivedMessage;
}

// A group (at most 100 rows of 11 parameters) always fits one statement, so its INSERT is atomic without a transaction.
export function createRawMessageStore(db: Database): RawMessageStore {
  const insert = groupCommit<Row, string>(async (rows) => {
    await insertRows(
      db.sql,
      `insert into inbound_raw_messages
         (id, received_at, mail_from, rcpt_to, inbox_ids, remote_ip, helo, tls_protocol, tls_cipher, size, raw, status, attempts)
       values`,
      rows,
      ({ id, receivedAt, message }, bind) =>
        `(${[
          id,
          receivedAt,
          message.mailFrom,
          message.recipients.map((r) => r.address),
          message.recipients.map((r) => r.inboxId),
          message.session.remoteIp,
          message.session.helo,
          message.session.tls?.protocol ?? null,
          message.session.tls?.cipher ?? null,
          message.raw.length,
          message.raw,
        ]
          .map(bind)
          .join(", ")}, 'pending', 0)`,
    );
    return rows.map((r) => r.id);
  }, GROUPING);
  return { store: (message) => insert({ id: newUuid(), receivedAt: new Date(), message }) };
}
