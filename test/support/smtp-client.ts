// A minimal SMTP client on a raw socket, independent of nodemailer: it sends exactly the bytes a test gives it
// (bare LFs, smuggling sequences, over-long lines), which a real client library would correct or refuse.
import net from "node:net";
import tls from "node:tls";

export interface SmtpReply {
  readonly code: number;
  /** The text of every line, joined with "\n" (enhanced status codes included). */
  readonly text: string;
}

export class RawSmtpClient {
  private socket: net.Socket | tls.TLSSocket;
  private buffer = "";
  private waiting: ((reply: SmtpReply | null) => void)[] = [];
  private replies: (SmtpReply | null)[] = [];
  private ended = false;
  readonly closed: Promise<void>;
  /** How long reply() waits by default; a load test under a busy machine waits longer. */
  replyTimeoutMs = 15_000;
  private markClosed!: () => void;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
    this.listen(socket);
  }

  /**
   * Connects (from `localAddress`, say another 127.x.y.z, when given), sends `preamble` first when given (a PROXY
   * protocol header, as a load balancer would), and reads the greeting.
   */
  static async connect(port: number, host = "127.0.0.1", localAddress?: string, preamble?: string | Buffer): Promise<{ client: RawSmtpClient; greeting: SmtpReply | null }> {
    const socket = net.connect({ port, host, ...(localAddress ? { localAddress } : {}) });
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    if (preamble !== undefined) socket.write(preamble);
    const client = new RawSmtpClient(socket);
    return { client, greeting: await client.reply() };
  }

  /** Sends one command line (CRLF added) and reads its reply; null when the server closed the connection. */
  async command(line: string): Promise<SmtpReply | null> {
    this.write(`${line}\r\n`);
    return this.reply();
  }

  write(data: string | Buffer): void {
    if (!this.socket.destroyed) this.socket.write(data);
  }

  /** The next reply, or null once the connection is closed. */
  reply(timeoutMs = this.replyTimeoutMs): Promise<SmtpReply | null> {
    const ready = this.replies.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no SMTP reply in time")), timeoutMs);
      this.waiting.push((reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
    });
  }

  /** STARTTLS, then the TLS handshake (the test server's certificate is self-signed). */
  async startTls(servername?: string): Promise<tls.TLSSocket> {
    const reply = await this.command("STARTTLS");
    if (reply?.code !== 220) throw new Error(`STARTTLS refused: ${reply?.code} ${reply?.text}`);
    const plain = this.socket as net.Socket;
    plain.removeAllListeners("data");
    plain.removeAllListeners("close");
    const secure = tls.connect({ socket: plain, rejectUnauthorized: false, servername });
    await new Promise<void>((resolve, reject) => secure.once("secureConnect", resolve).once("error", reject));
    this.socket = secure;
    this.listen(secure);
    return secure;
  }

  /** Ends the session politely when the server is still there. */
  async quit(): Promise<void> {
    if (!this.ended) await this.command("QUIT").catch(() => null);
    this.socket.destroy();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private listen(socket: net.Socket): void {
    socket.setEncoding("latin1");
    socket.on("data", (data: string) => this.receive(data));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      this.ended = true;
      this.markClosed();
      for (const wake of this.waiting.splice(0)) wake(null);
    });
  }

  private receive(data: string): void {
    this.buffer += data;
    for (;;) {
      const match = /^((?:\d{3}-[^\r\n]*\r?\n)*)(\d{3}) ?([^\r\n]*)\r?\n/.exec(this.buffer);
      if (!match) return;
      this.buffer = this.buffer.slice(match[0].length);
      const lines = [...match[1]!.split(/\r?\n/).filter(Boolean).map((l) => l.slice(4)), match[3]!];
      const reply = { code: Number(match[2]), text: lines.join("\n") };
      const wake = this.waiting.shift();
      if (wake) wake(reply);
      else this.replies.push(reply);
    }
  }
}

export interface Transaction {
  readonly from: string;
  readonly to: readonly string[];
  /** The message as sent after DATA, without the terminating "." line (no dot-stuffing is done); pieces are sent in turn. */
  readonly data: string | Buffer | readonly Buffer[];
}

export interface TransactionReplies {
  readonly mail: SmtpReply | null;
  readonly rcpt: (SmtpReply | null)[];
  readonly data: SmtpReply | null;
  /** The reply after the message, or null when DATA was refused. */
  readonly message: SmtpReply | null;
}

/** One mail transaction on an open session (EHLO already sent). */
export async function transaction(client: RawSmtpClient, t: Transaction): Promise<TransactionReplies> {
  const mail = await client.command(`MAIL FROM:<${t.from}>`);
  const rcpt: (SmtpReply | null)[] = [];
  for (const to of t.to) rcpt.push(await client.command(`RCPT TO:<${to}>`));
  const data = await client.command("DATA");
  if (data?.code !== 354) return { mail, rcpt, data, message: null };
  const pieces = typeof t.data === "string" || Buffer.isBuffer(t.data) ? [t.data] : t.data;
  for (const piece of pieces) client.write(piece);
  const last = pieces.at(-1) ?? "";
  client.write((typeof last === "string" ? last : last.subarray(-2).toString("latin1")).endsWith("\r\n") ? ".\r\n" : "\r\n.\r\n");
  return { mail, rcpt, data, message: await client.reply() };
}

/** Connects, says EHLO, runs one transaction and quits. */
export async function sendRaw(port: number, t: Transaction, helo = "client.example"): Promise<TransactionReplies> {
  const { client } = await RawSmtpClient.connect(port);
  try {
    await client.command(`EHLO ${helo}`);
    return await transaction(client, t);
  } finally {
    await client.quit();
  }
}
