// Durable acceptance: the raw message is committed before the server answers 250, so a crash right after the 250
// loses nothing; processing picks the row up (see processor.ts and sweeper.ts).
//
// Commits are grouped (src/db/group-commit.ts): messages whose DATA ends while an insert is under way go together
// in the next multi-row INSERT; each is answered 250 only after its group's commit, and a failed group answers each
// of its messages 451, so the sender retries. A message spooled to disk while it arrived (raw-body.ts) is committed
// in a transaction of its own, its bytes read back and inserted a chunk per statement into inbound_raw_chunks, so
// it is never held whole; its row's `raw` stays empty (rawChunks reads them back, a chunk at a time).
import type { FileHandle } from "node:fs/promises";
import type { Database, SqlTx } from "../db/database.js";
import { groupCommit, type GroupCommitOptions } from "../db/group-commit.js";
import { insertRows, type Bind } from "../db/values.js";
import { newUuid } from "../ids.js";
import { reclaimWhenIdle } from "../runtime/idle-reclaim.js";
import type { AdmittedRecipient } from "./admission.js";

/** What is known of the SMTP session a message came in (spec: inboundSecurity.smtp). */
export interface SessionFacts {
  readonly remoteIp: string;
  /** The name the client gave with HELO/EHLO. */
  readonly helo: string;
  /** Null for a cleartext session. */
  readonly tls: { readonly protocol: string; readonly cipher: string } | null;
}

export interface ReceivedEnvelope {
  /** The envelope sender; "" for the null sender of bounces. */
  readonly mailFrom: string;
  readonly recipients: readonly AdmittedRecipient[];
  readonly session: SessionFacts;
}

export interface ReceivedMessage extends ReceivedEnvelope {
  readonly raw: Buffer;
}

export interface RawMessageStore {
  /** Commits the raw message as pending (the bytes bound as binary); resolves with its id once committed. */
  store(message: ReceivedMessage): Promise<string>;
  /** Commits a message whose bytes are in a spool file of `size` bytes, a chunk at a time; resolves with its id. */
  storeSpooled(envelope: ReceivedEnvelope, file: FileHandle, size: number): Promise<string>;
}

/**
 * The chunks of a message committed in chunks (its row's `raw` is empty), in order, one statement each, as base64
 * text (about 1.35 times a chunk, with PostgreSQL's line breaks) decoded into a buffer of the chunk's own: a reader
 * holds about 2.5 times a chunk while one is read, however large the message. As bytea, a chunk came back as hex
 * text twice its size, and decoding it cost the processing thread ~36 ms more CPU per 9 MB read (PostgreSQL ~5 ms
 * less; a message in chunks is read twice, for authentication and for the parse). The buffer owns its memory whole,
 * so the parser gets it moved, not copied. `size` is checked: a message missing bytes throws rather than parse short.
 */
export async function* rawChunks(db: SqlTx, rawId: string, size: number): AsyncGenerator<Buffer> {
  let read = 0;
  for (let seq = 0; read < size; seq++) {
    const [row] = await db.query<{ data: string; length: number }>(
      `select encode(data, 'base64') as data, length(data) as length from inbound_raw_chunks where raw_message_id = $1 and seq = $2`,
      [rawId, seq],
    );
    if (!row) break;
    const chunk = Buffer.allocUnsafeSlow(row.length);
    const decoded = chunk.write(row.data, "base64");
    if (decoded !== row.length) throw new Error(`raw message ${rawId}: chunk ${seq} decoded to ${decoded} of its ${row.length} bytes`);
    read += decoded;
    yield chunk;
  }
  if (read !== size) throw new Error(`raw message ${rawId} has ${read} of its ${size} bytes`);
}

/** The whole of a message committed in chunks, for what needs it whole (a feedback report's authentication). */
export async function readChunks(db: SqlTx, rawId: string, size: number): Promise<Buffer> {
  const raw = Buffer.allocUnsafe(size);
  let filled = 0;
  for await (const chunk of rawChunks(db, rawId, size)) filled += chunk.copy(raw, filled);
  return raw;
}

const GROUPING: GroupCommitOptions<Row> = {
  maxGroup: 100,
  maxInFlight: 2,
  // The driver copies a statement's parameters while it writes them: a group's bytes are held a few times over.
  maxWeight: 4 * 1024 * 1024,
  weightOf: (row) => row.message.raw.length,
};

/** Bytes per statement (and per row of inbound_raw_chunks) of a spooled message. */
export const RAW_CHUNK_BYTES = 256 * 1024;
/** Spooled messages committed at once (each holds a connection). */
const SPOOLED_AT_ONCE = 4;

interface Row {
  readonly id: string;
  readonly message: ReceivedMessage;
}

const INSERT_ROW = `insert into inbound_raw_messages
  (id, received_at, mail_from, rcpt_to, inbox_ids, remote_ip, helo, tls_protocol, tls_cipher, size, raw, status, attempts)
values`;

/** One row of INSERT_ROW, every value bound. */
function rowOf(id: string, envelope: ReceivedEnvelope, size: number, raw: Buffer, bind: Bind): string {
  const values = [
    id,
    new Date(),
    envelope.mailFrom,
    envelope.recipients.map((r) => r.address),
    envelope.recipients.map((r) => r.inboxId),
    envelope.session.remoteIp,
    envelope.session.helo,
    envelope.session.tls?.protocol ?? null,
    envelope.session.tls?.cipher ?? null,
    size,
    raw,
  ];
  return `(${values.map(bind).join(", ")}, 'pending', 0)`;
}

/**
 * Groups of up to this many rows are inserted as prepared statements (a text per group size, kept by each of the
 * pool's connections): parsing and planning a group's INSERT afresh cost PostgreSQL about a third of its insert (10
 * KB messages in groups of 4: 0.22 ms of CPU a row as text, 0.16 prepared; of 16: 0.125 and 0.077). Larger groups,
 * rare bursts, go as text: each prepared size holds its plan on every connection.
 */
const PREPARED_GROUP_ROWS = 32;

// A group (at most 100 rows of 11 parameters) always fits one statement, so its INSERT is atomic without a transaction.
export function createRawMessageStore(db: Database): RawMessageStore {
  const insert = groupCommit<Row, string>(async (rows) => {
    await insertRows(db.sql, INSERT_ROW, rows, ({ id, message }, bind) => rowOf(id, message, message.raw.length, message.raw, bind), {
      prepared: rows.length <= PREPARED_GROUP_ROWS,
    });
    return rows.map((r) => r.id);
  }, GROUPING);

  // One at a time per slot: the same queue as grouping, a group of one each.
  const insertSpooled = groupCommit<Spooled, string>(
    async ([spooled]) => {
      const { id, envelope, file, size } = spooled!;
      await db.sql.transaction(async (tx) => {
        await insertRows(tx, INSERT_ROW, [envelope], (e, bind) => rowOf(id, e, size, EMPTY, bind));
        // One buffer for every chunk: the driver has copied a chunk into its statement by the time the next is read.
        const buffer = Buffer.allocUnsafe(Math.min(RAW_CHUNK_BYTES, size));
        for (let seq = 0, position = 0; position < size; seq++) {
          const { bytesRead } = await file.read({ buffer, position, length: Math.min(buffer.length, size - position) });
          if (bytesRead === 0) throw new Error(`the spool file ended at ${position} of ${size} bytes`);
          await tx.query(`insert into inbound_raw_chunks (raw_message_id, seq, data) values ($1, $2, $3)`, [id, seq, buffer.subarray(0, bytesRead)]);
          position += bytesRead;
        }
      });
      // A message this large passed through the listener's thread (its DATA, the spool's read-back, the driver's
      // statements): once a burst of them is over and the listener idle, what they left is collected.
      reclaimWhenIdle();
      return [id];
    },
    { maxGroup: 1, maxInFlight: SPOOLED_AT_ONCE },
  );

  return {
    store: (message) => insert({ id: newUuid(), message }),
    storeSpooled: (envelope, file, size) => insertSpooled({ id: newUuid(), envelope, file, size }),
  };
}

const EMPTY = Buffer.alloc(0);

interface Spooled {
  readonly id: string;
  readonly envelope: ReceivedEnvelope;
  readonly file: FileHandle;
  readonly size: number;
}
