// A real SMTP peer for delivery tests (smtp-server on loopback, STARTTLS with smtp-server's own self-signed
// certificate). It records every transaction (MAIL FROM, RCPT list, raw bytes, TLS) and every RCPT it answered,
// and answers each recipient by its local part:
//   defer…            451 4.2.0 (until recover(address) is called for it)
//   reject… / nobody… 550 5.1.1 (a hard bounce)
//   policy…           550 5.7.1 (a refusal that is not a bounce)
//   anything else     250
// holdData(n, ms) holds the reply to the next n DATA commands for ms (a peer that is slow to answer), after the
// transaction has been recorded (releaseData answers them at once). `connections` counts the connections accepted
// and open.
import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerAddress } from "smtp-server";

export interface SinkTransaction {
  readonly from: string;
  readonly to: string[];
  readonly raw: Buffer;
  readonly secure: boolean;
  readonly helo: string;
}

export interface SmtpSink {
  readonly port: number;
  /** Completed DATA transfers, in order (recorded before the reply). */
  readonly transactions: SinkTransaction[];
  /** Every RCPT and the code it was answered with. */
  readonly rcpts: { address: string; code: number }[];
  /** Makes a `defer…` address accept from now on. */
  recover(address: string): void;
  /** Holds the reply to the next `count` DATA transfers for `ms`. */
  holdData(count: number, ms: number): void;
  /** Answers every DATA transfer held now. */
  releaseData(): void;
  /** Transactions that carried mail for this address. */
  copiesFor(address: string): SinkTransaction[];
  /** Connections accepted so far, and open now. */
  readonly connections: { readonly accepted: number; readonly open: number };
  stop(): Promise<void>;
}

function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

export async function startSmtpSink(host = "127.0.0.1"): Promise<SmtpSink> {
  const transactions: SinkTransaction[] = [];
  const rcpts: { address: string; code: number }[] = [];
  const recovered = new Set<string>();
  let hold = { count: 0, ms: 0 };
  const connections = { accepted: 0, open: 0 };
  const held = new Set<() => void>();

  const replyFor = (address: string): { code: number; message: string } => {
    const local = address.slice(0, address.lastIndexOf("@")).toLowerCase();
    if (local.startsWith("defer") && !recovered.has(address.toLowerCase())) return { code: 451, message: "4.2.0 Mailbox busy, try again later" };
    if (local.startsWith("reject") || local.startsWith("nobody")) return { code: 550, message: "5.1.1 <" + address + ">: Recipient address rejected: User unknown" };
    if (local.startsWith("policy")) return { code: 550, message: "5.7.1 Message refused by policy" };
    return { code: 250, message: "Accepted" };
  };

  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ["AUTH"],
    banner: "sink ESMTP",
    onConnect(_session, callback) {
      connections.accepted++;
      connections.open++;
      callback();
    },
    onClose() {
      connections.open--;
    },
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      const reply = replyFor(address.address);
      rcpts.push({ address: address.address, code: reply.code });
      if (reply.code === 250) callback();
      else callback(smtpError(reply.code, reply.message));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const n = transactions.length + 1;
        transactions.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          secure: session.secure,
          helo: session.hostNameAppearsAs,
        });
        const reply = () => callback(null, `2.0.0 Ok: queued as SINK${n}`);
        if (hold.count > 0) {
          hold.count--;
          const release = () => {
            if (!held.delete(release)) return;
            clearTimeout(timer);
            reply();
          };
          const timer = setTimeout(release, hold.ms).unref();
          held.add(release);
        } else reply();
      });
    },
  });
  server.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;

  return {
    port,
    transactions,
    rcpts,
    recover: (address) => void recovered.add(address.toLowerCase()),
    holdData(count, ms) {
      hold = { count, ms };
    },
    releaseData() {
      for (const release of [...held]) release();
    },
    copiesFor: (address) => transactions.filter((t) => t.to.some((r) => r.toLowerCase() === address.toLowerCase())),
    connections,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
