// The SMTP listener: smtp-server configured for receiving only (no AUTH, no relaying), STARTTLS with our
// certificate, the session limits, the per-client limits a real MTA keeps (connections per client address, refused
// recipients per session, each refusal past a few answered slowly), and the one adapter that turns async hooks into
// smtp-server's callbacks.
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import type { Logger } from "../logger.js";
import type { SmtpMetrics } from "../metrics/metrics.js";
import { localError, SmtpError } from "./smtp-error.js";
import type { TlsCertificate } from "./tls-certificate.js";

/** The receiving logic. A hook refuses by throwing SmtpError; any other error is answered 451 and logged. */
export interface SmtpHooks {
  /** MAIL FROM: resolves when a transaction may start. */
  mailFrom(address: string, session: SMTPServerSession): Promise<void>;
  /** RCPT TO: resolves when the recipient is admitted. */
  rcptTo(recipient: string, session: SMTPServerSession): Promise<void>;
  /** DATA: consumes the message and resolves with the text of the 250 reply once it is durable. */
  data(message: SMTPServerDataStream, session: SMTPServerSession): Promise<string>;
}

export interface SmtpServerOptions {
  /** Banner and EHLO name. */
  readonly hostname: string;
  readonly tls: TlsCertificate;
  readonly maxConnections: number;
  /** Concurrent connections from one client address. */
  readonly maxConnectionsPerClient: number;
  /** Refused recipients (5xx) in one session; the one that reaches it ends the session with 421. */
  readonly maxRefusedRecipients: number;
  /** Refusals after this many in a session wait refusalDelayMs before they are answered. */
  readonly refusalDelayAfter: number;
  readonly refusalDelayMs: number;
  readonly idleTimeoutMs: number;
  readonly sessionTimeoutMs: number;
  /** Advertised with SIZE; a message over it is flagged on its stream (the data hook refuses it). */
  readonly maxMessageBytes: number;
  /** Every connection starts with a PROXY protocol header (a TCP load balancer in front): the client address is its. */
  readonly proxyProtocol?: boolean;
  readonly log: Logger;
  /** Sessions, refusals by reply and accepted messages are counted here. */
  readonly metrics?: SmtpMetrics;
}

export interface RunningSmtpServer {
  readonly port: number;
  /** Whether the listener accepts connections. */
  listening(): boolean;
  /**
   * Drains: no new connections; sessions between transactions are told 421 and closed at once, a transaction in
   * progress may finish (its next MAIL FROM is told 421) for up to `graceMs`; CLOSE_GRACE_MS after that, what is
   * left is told 421 and closed.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * RFC 5321 caps a command line at 512 octets; extension parameters (SIZE, BODY, SMTPUTF8 addresses) may add a
 * little. smtp-server's 16 KiB default exists for AUTH blobs, and AUTH is off here.
 */
const MAX_COMMAND_BYTES = 2048;
/** The SMTP command each hook answers (a metrics label). */
const COMMANDS: Record<keyof SmtpHooks, string> = { mailFrom: "mail", rcptTo: "rcpt", data: "data" };
/** After the drain's grace: how long the sessions still open get before they are told 421 and closed. */
const CLOSE_GRACE_MS = 5000;
const SHUTTING_DOWN = ["4.3.2", "shutting down, try again later"] as const;

export async function startSmtpServer(
  options: SmtpServerOptions,
  hooks: SmtpHooks,
  port: number,
  host: string,
): Promise<RunningSmtpServer> {
  const { log, metrics } = options;
  const deadlines = new Map<string, NodeJS.Timeout>();
  /** Open sessions per client address, and the address each counted session was counted under. */
  const perClient = new Map<string, number>();
  const countedUnder = new Map<string, string>();
  /** Refused recipients per session. */
  const refusals = new Map<string, number>();
  let draining = false;

  /** The one adapter between async hooks and smtp-server's callbacks; every refusal is counted by its reply. */
  function settle<R>(work: Promise<R>, done: (err: Error | null, value?: R) => void, hook: keyof SmtpHooks): void {
    const refuse = (e: SmtpError) => {
      metrics?.refused(COMMANDS[hook], e.responseCode, e.enhancedStatus);
      done(e);
    };
    work.then(
      (value) => done(null, value),
      (e: unknown) => {
        if (e instanceof SmtpError) return refuse(e);
        log.error("smtp hook failed", { hook, error: e });
        refuse(localError());
      },
    );
  }

  const server: SMTPServer = new SMTPServer({
    name: options.hostname,
    banner: "ready",
    key: options.tls.key,
    cert: options.tls.cert,
    // Receiving only: no AUTH means no submission and no relaying through this port.
    disabledCommands: ["AUTH"],
    size: options.maxMessageBytes,
    maxClients: options.maxConnections,
    socketTimeout: options.idleTimeoutMs,
    closeTimeout: CLOSE_GRACE_MS,
    maxCommandLength: MAX_COMMAND_BYTES,
    // Reverse DNS says nothing we store, and would make every connection wait on a resolver.
    disableReverseLookup: true,
    logger: false,
    useProxy: options.proxyProtocol ?? false,
    onConnect(session, callback) {
      const client = session.remoteAddress;
      const open = perClient.get(client) ?? 0;
      if (open >= options.maxConnectionsPerClient) {
        metrics?.refused("connect", 421, "4.7.0");
        return callback(new SmtpError(421, "4.7.0", "too many connections from your address, try again later"));
      }
      metrics?.sessionOpened();
      perClient.set(client, open + 1);
      countedUnder.set(session.id, client);
      const timer = setTimeout(() => endSession(session.id), options.sessionTimeoutMs);
      timer.unref();
      deadlines.set(session.id, timer);
      callback();
    },
    onClose(session) {
      clearTimeout(deadlines.get(session.id));
      deadlines.delete(session.id);
      refusals.delete(session.id);
      const client = countedUnder.get(session.id);
      if (client === undefined) return;
      metrics?.sessionClosed();
      countedUnder.delete(session.id);
      const open = perClient.get(client)! - 1;
      if (open === 0) perClient.delete(client);
      else perClient.set(client, open);
    },
    onMailFrom(address, session, callback) {
      if (draining) return callback(new SmtpError(421, ...SHUTTING_DOWN));
      settle(hooks.mailFrom(address.address, session), callback, "mailFrom");
    },
    onRcptTo(address, session, callback) {
      settle(counted(hooks.rcptTo(address.address, session), session.id), callback, "rcptTo");
    },
    onData(stream, session, callback) {
      const accepted = hooks.data(stream, session).then((reply) => {
        // smtp-server counts the bytes of DATA as they stream in.
        metrics?.accepted(stream.byteLength);
        return reply;
      });
      settle(accepted, callback, "data");
    },
  });

  /**
   * Counts a refused recipient against the session (Postfix's smtpd_soft/hard_error_limit for RCPT): past a few,
   * each refusal waits before it is answered, and the one that reaches the limit ends the session, so probing for
   * addresses is slow and bounded per connection (and connections per client address are bounded too).
   */
  async function counted(admission: Promise<void>, sessionId: string): Promise<void> {
    try {
      await admission;
    } catch (e) {
      if (!(e instanceof SmtpError) || e.responseCode < 500) throw e;
      const refused = (refusals.get(sessionId) ?? 0) + 1;
      refusals.set(sessionId, refused);
      if (refused >= options.maxRefusedRecipients) {
        throw new SmtpError(421, "4.7.0", "too many refused recipients, closing connection");
      }
      if (refused > options.refusalDelayAfter) await sleep(options.refusalDelayMs);
      throw e;
    }
  }

  /** The idle timeout alone lets a client that trickles bytes hold a connection forever. */
  function endSession(id: string): void {
    deadlines.delete(id);
    for (const connection of server.connections) {
      if (connection.id !== id) continue;
      connection.send(421, "4.4.2 session time limit reached, closing connection");
      connection.close();
    }
  }

  server.on("error", (error: Error) => log.warn("smtp connection error", { error: error.message }));
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(port, host, () => {
      server.server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.server.address() as AddressInfo).port,
    listening: () => server.server.listening,
    async close(graceMs = 0) {
      draining = true;
      for (const timer of deadlines.values()) clearTimeout(timer);
      // Emitted once the listener is closed and the last session has ended.
      const ended = new Promise<void>((resolve) => server.server.once("close", () => resolve()));
      server.server.close();
      for (const connection of server.connections) {
        // A 421 closes the connection (smtp-server).
        if (!(connection.session as SMTPServerSession | undefined)?.envelope.mailFrom) connection.send(421, SHUTTING_DOWN.join(" "));
      }
      const deadline = sleep(graceMs, "deadline", { ref: false });
      if ((await Promise.race([ended, deadline])) === undefined) return;
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
