// The outbound benchmark's SMTP sink: where both systems deliver (ours through SMTP_ROUTES, Postfix through its
// relayhost). smtp-server on 127.0.0.1, run as a child process of the bench (IPC), so its event loop is its own.
//
// Every message is recorded when its final dot has arrived (before the 250 is written): the epoch time (high
// resolution, comparable across processes of this machine), its Message-ID, its Subject (which carries the bench's
// token), its recipients and its size. The parent takes the records in batches ({cmd:"take"}).
//
// Deferrals: a recipient whose local part starts with `defer-` is answered `451 4.3.0` at RCPT on its first
// `deferAttempts` attempts (counted per address; the bench gives every deferred message its own address), then 250.
//
// Greeting: smtp-server waits a fixed 100 ms before its 220 (an early-talker check it has no option for). A real
// receiving MTA (Postfix's smtpd, the big providers) greets at once, and a delivery that opens a connection per
// message would pay the 100 ms on every message, so by default the sink greets at once (greetingDelayMs 0):
// SMTPConnection.init is replaced by one that does what the original does, without the timer.
import { SMTPServer, type SMTPServerSession } from "smtp-server";
import { SMTPConnection } from "smtp-server/lib/smtp-connection.js";
import { epochNow } from "./clock.js";

export interface SinkOptions {
  /** 100 is smtp-server's own fixed delay; 0 greets at once. */
  readonly greetingDelayMs: number;
  /** How many attempts of a `defer-` recipient are answered 451 before it is accepted. */
  readonly deferAttempts: number;
}

export interface SinkRecord {
  /** Epoch ms (high resolution) when the final dot arrived. */
  readonly at: number;
  readonly messageId: string;
  readonly subject: string;
  readonly rcpt: readonly string[];
  readonly bytes: number;
  /**
   * Milliseconds from the start of this message's transaction to its final dot: from connect for the first message
   * of a connection, from MAIL FROM for the next ones on a kept connection.
   */
  readonly sinceConnectMs: number;
}

export interface SinkCounters {
  readonly connections: number;
  readonly transactions: number;
  readonly deferredRcpts: number;
  readonly acceptedRcpts: number;
}

export type SinkCommand = { readonly cmd: "take" } | { readonly cmd: "options"; readonly options: SinkOptions };
export interface SinkTake {
  readonly records: readonly SinkRecord[];
  readonly counters: SinkCounters;
}

const now = epochNow;
const MAX_HEADER_BYTES = 64 * 1024;

let options: SinkOptions = { greetingDelayMs: 0, deferAttempts: 1 };
let records: SinkRecord[] = [];
const counters = { connections: 0, transactions: 0, deferredRcpts: 0, acceptedRcpts: 0 };
const attempts = new Map<string, number>();
const connectedAt = new Map<string, number>();

// What SMTPConnection.init does (smtp-server 3.21.6), with the early-talker delay made a setting.
type Connection = {
  _server: { options: { maxClients?: number }; connections: Set<unknown> };
  name: string;
  _setListeners(done: () => void): void;
  send(code: number, text: string, ...rest: unknown[]): void;
  connectionReady(): void;
};
(SMTPConnection.prototype as unknown as { init: (this: Connection) => void }).init = function (this: Connection) {
  this._setListeners(() => {
    if (this._server.options.maxClients && this._server.connections.size > this._server.options.maxClients) {
      return this.send(421, this.name + " Too many connected clients, try again in a moment", false);
    }
    if (options.greetingDelayMs <= 0) this.connectionReady();
    else setTimeout(() => this.connectionReady(), options.greetingDelayMs).unref();
  });
};

function headerValue(header: string, name: string): string {
  const m = new RegExp(`^${name}:[ \\t]*(.*(?:\\r?\\n[ \\t].*)*)`, "im").exec(header);
  return m ? m[1]!.replace(/\r?\n[ \t]+/g, " ").trim() : "";
}

function smtpError(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code });
}

const server = new SMTPServer({
  name: "sink.bench.localhost",
  banner: "bench sink",
  authOptional: true,
  disabledCommands: ["AUTH", "STARTTLS"],
  hideSTARTTLS: true,
  disableReverseLookup: true,
  logger: false,
  maxClients: 2000,
  size: 50 * 1024 * 1024,
  socketTimeout: 120_000,
  onConnect(session: SMTPServerSession, callback: (err?: Error) => void) {
    counters.connections++;
    connectedAt.set(session.id, now());
    callback();
  },
  onClose(session: SMTPServerSession) {
    connectedAt.delete(session.id);
  },
  onMailFrom(_address, session, callback) {
    if (!connectedAt.has(session.id)) connectedAt.set(session.id, now());
    callback();
  },
  onRcptTo(address, _session, callback) {
    const email = address.address.toLowerCase();
    if (email.startsWith("defer-")) {
      const n = (attempts.get(email) ?? 0) + 1;
      attempts.set(email, n);
      if (n <= options.deferAttempts) {
        counters.deferredRcpts++;
        return callback(smtpError(451, "4.3.0 Bench sink: try again later"));
      }
    }
    counters.acceptedRcpts++;
    callback();
  },
  onData(stream, session, callback) {
    let header = "";
    let headerDone = false;
    let bytes = 0;
    stream.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (headerDone) return;
      header += chunk.toString("latin1");
      const end = header.search(/\r?\n\r?\n/);
      if (end >= 0) {
        header = header.slice(0, end);
        headerDone = true;
      } else if (header.length > MAX_HEADER_BYTES) headerDone = true;
    });
    stream.on("end", () => {
      const at = now();
      counters.transactions++;
      records.push({
        at,
        messageId: headerValue(header, "Message-ID"),
        subject: headerValue(header, "Subject"),
        rcpt: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
        bytes,
        sinceConnectMs: at - (connectedAt.get(session.id) ?? at),
      });
      // The next message on this connection starts at its MAIL FROM.
      connectedAt.delete(session.id);
      callback(null, "2.0.0 Ok: queued by the bench sink");
    });
  },
});
server.on("error", (e: Error) => process.stderr.write(`outbound-sink: ${e.message}\n`));

process.on("message", (m: SinkCommand) => {
  if (m.cmd === "options") {
    options = m.options;
    attempts.clear();
    process.send!({ options: true });
  } else if (m.cmd === "take") {
    const taken: SinkTake = { records, counters: { ...counters } };
    records = [];
    process.send!({ taken });
  }
});
// The parent going away ends the sink.
process.on("disconnect", () => process.exit(0));

server.listen(0, "127.0.0.1", () => {
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  process.send!({ ready: port });
});
