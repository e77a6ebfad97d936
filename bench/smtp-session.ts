// The benchmarks' SMTP client connection (bench/inbound-client.ts into our smtp role and its peers,
// bench/outbound-client.ts into Postfix): raw sockets, every complete (possibly multi-line) reply handed to the
// oldest waiter; MAIL/RCPT/DATA pipelined when the server offers PIPELINING, then the message and the final dot in
// one write; a message counts only when the reply to the final dot is 250.
import { connect, type Socket } from "node:net";
import { epochNow } from "./clock.js";

export interface Reply {
  readonly code: number;
  readonly text: string;
}

/** A refusal: the reply and the command it answered. */
export class ReplyError extends Error {
  constructor(
    readonly reply: Reply,
    what: string,
  ) {
    super(`${what}: ${reply.code} ${reply.text}`);
  }
}

const REPLY_TIMEOUT_MS = 30_000;

export const now = epochNow;

export class SmtpSession {
  private buffer = "";
  private lines: string[] = [];
  private readonly waiters: { resolve: (r: Reply) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }[] = [];
  private closedWith: Error | null = null;
  pipelining = false;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => this.onData(chunk));
    socket.on("error", (e) => this.fail(e));
    socket.on("close", () => this.fail(new Error("connection closed")));
  }

  /** A connection and its banner, still to be checked (greet mode times it). */
  static open(host: string, port: number): { session: SmtpSession; banner: Promise<Reply> } {
    const session = new SmtpSession(connect({ host, port }));
    return { session, banner: session.next() };
  }

  /** A session past its 220 banner and EHLO. */
  static async ready(host: string, port: number): Promise<SmtpSession> {
    const { session, banner } = SmtpSession.open(host, port);
    try {
      const reply = await banner;
      if (reply.code !== 220) throw new ReplyError(reply, "banner");
      await session.ehlo();
      return session;
    } catch (e) {
      session.destroy();
      throw e;
    }
  }

  get broken(): boolean {
    return this.closedWith !== null;
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, "");
      this.buffer = this.buffer.slice(nl + 1);
      this.lines.push(line);
      if (line.length >= 4 && line[3] === "-") continue;
      const reply = { code: Number(line.slice(0, 3)), text: this.lines.map((l) => l.slice(4)).join("\n") };
      this.lines = [];
      const waiter = this.waiters.shift();
      if (waiter) {
        clearTimeout(waiter.timer);
        waiter.resolve(reply);
      }
    }
  }

  private fail(e: Error): void {
    if (this.closedWith) return;
    this.closedWith = e;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(e);
    }
  }

  private next(): Promise<Reply> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fail(new Error(`no reply within ${REPLY_TIMEOUT_MS} ms`));
        this.socket.destroy();
      }, REPLY_TIMEOUT_MS);
      this.waiters.push({ resolve, reject, timer });
    });
  }

  /** Writes `data` and waits for `replies` replies. */
  send(data: string | Buffer, replies: number): Promise<Reply[]> {
    const waits = Array.from({ length: replies }, () => this.next());
    this.socket.write(data);
    return Promise.all(waits);
  }

  async ehlo(): Promise<void> {
    const [reply] = await this.send("EHLO bench-client.localhost\r\n", 1);
    if (reply!.code !== 250) throw new ReplyError(reply!, "EHLO");
    this.pipelining = /^PIPELINING\b/im.test(reply!.text);
  }

  /**
   * One transaction; `message` ends with the final dot. Resolves with the time the final dot was written and the
   * time of the 250; a refusal throws ReplyError and leaves the session ready for the next transaction.
   */
  async transaction(from: string, to: string, message: string | Buffer): Promise<{ dotAt: number; okAt: number }> {
    const commands = [`MAIL FROM:<${from}>\r\n`, `RCPT TO:<${to}>\r\n`, `DATA\r\n`];
    const replies = this.pipelining ? await this.send(commands.join(""), 3) : await this.sequential(commands);
    const expected = [250, 250, 354];
    const refused = replies.findIndex((r, i) => r.code !== expected[i]);
    if (refused >= 0) {
      // The transaction stays open after a refused MAIL or RCPT (the next MAIL would get 503 "nested MAIL"): an MTA
      // resets it before the next message; a pipelined DATA that went through anyway gets an empty message.
      await this.send(replies[2]?.code === 354 ? ".\r\n" : "RSET\r\n", 1).catch(() => undefined);
      throw new ReplyError(replies[refused]!, commands[refused]!.trim());
    }
    const dotAt = now();
    const [reply] = await this.send(message, 1);
    const okAt = now();
    if (reply!.code !== 250) {
      // After a refused DATA reply the session stays usable; after a refused MAIL/RCPT the pipelined DATA got 503/554.
      throw new ReplyError(reply!, "final dot");
    }
    return { dotAt, okAt };
  }

  private async sequential(commands: readonly string[]): Promise<Reply[]> {
    const replies: Reply[] = [];
    for (const c of commands) {
      const [r] = await this.send(c, 1);
      replies.push(r!);
      if (r!.code >= 400) {
        // Keep the reply count the caller expects; the check there reports the refusal.
        while (replies.length < commands.length) replies.push({ code: 0, text: "not sent" });
        break;
      }
    }
    return replies;
  }

  quit(): void {
    if (!this.closedWith) this.socket.end("QUIT\r\n");
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  destroy(): void {
    this.socket.destroy();
  }
}
