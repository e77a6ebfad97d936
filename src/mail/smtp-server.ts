// The SMTP listener: smtp-server configured for receiving only (no AUTH, no relaying), STARTTLS with our
// certificate, the session limits, the per-client limits a real MTA keeps (connections per client address or IPv6
// /64, refused recipients per session, each refusal past a few answered slowly), a message sent before its 354
// refused as Postfix refuses it, the PROXY protocol header read from trusted load balancers only, and the one
// adapter that turns async hooks into smtp-server's callbacks.
import type { AddressInfo, Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from "smtp-server";
import type { Logger } from "../logger.js";
import type { SmtpMetrics } from "../metrics/metrics.js";
import { rangeMatcher, type AddressRange } from "../net/address-ranges.js";
import { PeerConnections } from "../net/peer-connections.js";
import { readProxyHeader, sessionId } from "./proxy-v2.js";
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
  /** Concurrent connections from one client: an IPv4 address, or an IPv6 /64. */
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
  /**
   * The TCP load balancers in front (addresses and ranges): their connections start with a PROXY protocol header,
   * whose client address is the session's. Other peers are served as they connect, and a header from them is
   * refused. Undefined: nobody sends one.
   */
  readonly proxyTrusted?: readonly AddressRange[] | undefined;
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

type ProxyCallback = Parameters<SMTPServer["_handleProxy"]>[1];

/**
 * smtp-server reads a PROXY header from every peer (`useProxy: true`) or from exact addresses, while a load balancer
 * connects from a range of them; and it reads the text header (v1) only, while AWS's load balancers send the binary
 * one (v2). Its two per-socket steps (methods its type declarations expose) are taken over: whether a header is
 * expected comes from the trusted ranges, and a binary header is read here (proxy-v2.ts). With `useProxy` off, a
 * version that no longer asks them trusts nobody rather than everyone.
 */
class SmtpListener extends SMTPServer {
  private readonly trusted: (address: string | undefined) => boolean;

  constructor(options: SMTPServerOptions, proxyTrusted: readonly AddressRange[] | undefined) {
    super({ ...options, useProxy: false });
    this.trusted = proxyTrusted ? rangeMatcher(proxyTrusted) : () => false;
  }

  override _expectsProxyHeader(socket: Socket): boolean {
    return this.trusted(socket.remoteAddress);
  }

  override _handleProxy(socket: Socket, callback: ProxyCallback): void {
    if (!this._expectsProxyHeader(socket)) return super._handleProxy(socket, callback);
    readProxyHeader(socket, (err, header) => {
      if (err || !header) return callback(err ?? new Error("no PROXY protocol header"));
      if (header.kind === "text") return super._handleProxy(socket, callback);
      const client = header.remoteAddress === undefined ? {} : { remoteAddress: header.remoteAddress, remotePort: header.remotePort };
      callback(null, { id: sessionId(), ...client });
    });
  }
}

/**
 * RFC 2920 §3.1 lets a client pipeline MAIL, RCPT and DATA, but the message only follows the 354. Bytes of it that
 * were already read when DATA was answered (smtp-server feeds what it holds into the stream before it returns to
 * the event loop) were sent without waiting: spam software does that, and so do smuggling attempts that pipeline a
 * second transaction behind a bad end of data. Postfix refuses it (smtpd_forbid_unauth_pipelining).
 */
function sentBefore354(stream: SMTPServerDataStream): Promise<boolean> {
  return new Promise((resolve) => process.nextTick(() => resolve(stream.byteLength > 0 || stream.writableEnded)));
}

/**
 * Refused recipients per session (Postfix's smtpd_soft/hard_error_limit for RCPT): past a few, each refusal waits
 * before it is answered, and the one that reaches the limit ends the session, so probing for addresses is slow and
 * bounded per connection (and connections per client are bounded too).
 */
function refusalTarpit(options: SmtpServerOptions) {
  const refusals = new Map<string, number>();
  return {
    async counted(admission: Promise<void>, sessionId: string): Promise<void> {
      try {
        await admission;
      } catch (e) {
        if (!(e instanceof SmtpError) || e.responseCode < 500) throw e;
        const refused = (refusals.get(sessionId) ?? 0) + 1;
        refusals.set(sessionId, refused);
        if (refused >= options.maxRefusedRecipients) throw new SmtpError(421, "4.7.0", "too many refused recipients, closing connection");
        if (refused > options.refusalDelayAfter) await sleep(options.refusalDelayMs);
        throw e;
      }
    },
    forget: (sessionId: string) => void refusals.delete(sessionId),
  };
}

/** The one adapter between async hooks and smtp-server's callbacks; every refusal is counted by its reply. */
function settleHook<R>(
  { log, metrics }: SmtpServerOptions,
  work: Promise<R>,
  done: (err: Error | null, value?: R) => void,
  hook: keyof SmtpHooks,
): void {
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

export async function startSmtpServer(
  options: SmtpServerOptions,
  hooks: SmtpHooks,
  port: number,
  host: string,
): Promise<RunningSmtpServer> {
  const { log, metrics } = options;
  const deadlines = new Map<string, NodeJS.Timeout>();
  // Counted per client as Postfix's anvil counts them, an IPv6 /64 being one client; released when the session ends.
  const clients = new PeerConnections(options.maxConnectionsPerClient);
  const releases = new Map<string, () => void>();
  const tarpit = refusalTarpit(options);
  let draining = false;

  const settle = <R>(work: Promise<R>, done: (err: Error | null, value?: R) => void, hook: keyof SmtpHooks) => settleHook(options, work, done, hook);

  const server: SMTPServer = new SmtpListener(
    {
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
      onConnect(session, callback) {
        const release = clients.admit(session.remoteAddress);
        if (!release) {
          metrics?.refused("connect", 421, "4.7.0");
          return callback(new SmtpError(421, "4.7.0", "too many connections from your address, try again later"));
        }
        releases.set(session.id, release);
        metrics?.sessionOpened();
        const timer = setTimeout(() => endSession(session.id, 421, "4.4.2 session time limit reached, closing connection"), options.sessionTimeoutMs);
        timer.unref();
        deadlines.set(session.id, timer);
        callback();
      },
      onClose(session) {
        clearTimeout(deadlines.get(session.id));
        deadlines.delete(session.id);
        tarpit.forget(session.id);
        const release = releases.get(session.id);
        if (!release) return;
        releases.delete(session.id);
        release();
        metrics?.sessionClosed();
      },
      onMailFrom(address, session, callback) {
        if (draining) return callback(new SmtpError(421, ...SHUTTING_DOWN));
        settle(hooks.mailFrom(address.address, session), callback, "mailFrom");
      },
      onRcptTo(address, session, callback) {
        settle(tarpit.counted(hooks.rcptTo(address.address, session), session.id), callback, "rcptTo");
      },
      onData(stream, session, callback) {
        void sentBefore354(stream).then((early) => {
          if (early) {
            // Nothing of it is stored, and the rest of what the client sent is not read as commands.
            metrics?.refused("data", 554, "5.5.0");
            return endSession(session.id, 554, "5.5.0 Error: SMTP protocol synchronization");
          }
          const accepted = hooks.data(stream, session).then((reply) => {
            // smtp-server counts the bytes of DATA as they stream in.
            metrics?.accepted(stream.byteLength);
            return reply;
          });
          settle(accepted, callback, "data");
        });
      },
    },
    options.proxyTrusted,
  );

  /** Answers a session and closes it: the idle timeout alone lets a client that trickles bytes hold it forever. */
  function endSession(id: string, code: number, text: string): void {
    deadlines.delete(id);
    for (const connection of server.connections) {
      if (connection.id !== id) continue;
      connection.send(code, text);
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
