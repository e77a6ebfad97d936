// The SMTP hooks of receiving: a transaction delayed at MAIL FROM while processing falls behind (the in-flow delay)
// and refused while it is too far behind, recipient admission at RCPT, and at DATA the size and structure limits
// checked as the message streams in (its bytes kept within the receive budget or spooled, see raw-body.ts), then the
// raw message committed before the 250. Domain outcomes become SMTP replies here.
import type { FileHandle } from "node:fs/promises";
import type { SMTPServerDataStream, SMTPServerEnvelope, SMTPServerSession } from "smtp-server";
import type { AdmitRecipient, AdmittedRecipient } from "../inbound/admission.js";
import type { RawBodies, RawBody } from "../inbound/raw-body.js";
import type { ReceivedEnvelope, ReceivedMessage, SessionFacts } from "../inbound/receive.js";
import { MessageStructureCheck, type LimitViolation, type MessageLimits } from "./message-limits.js";
import { SmtpError } from "./smtp-error.js";
import type { SmtpHooks } from "./smtp-server.js";

export interface InboundHooksDeps {
  readonly admit: AdmitRecipient;
  /** Where DATA is kept while it streams in. */
  readonly bodies: RawBodies;
  /** Commits a raw message held in memory; resolves with its id. */
  readonly store: (message: ReceivedMessage) => Promise<string>;
  /** Commits a raw message from its spool file; resolves with its id. */
  readonly storeSpooled: (envelope: ReceivedEnvelope, file: FileHandle, size: number) => Promise<string>;
  /**
   * Called with each committed message once its 250 is on its way (the reply waits for the commit alone); with its
   * bytes when they are in memory, which the callee may take (they are not used here afterwards).
   */
  readonly accepted: (rawId: string, size: number, message?: ReceivedMessage) => void;
  /** Whether accepted mail waits for processing beyond its bound: new transactions are refused until it drains. */
  readonly overloaded: () => boolean;
  /** Resolves when a new transaction may go ahead (the in-flow delay); undefined when it may at once. */
  readonly admitTransaction: () => Promise<void> | undefined;
  readonly limits: MessageLimits & { readonly maxMessageBytes: number; readonly maxRecipients: number };
}

/** Longest HELO name or envelope sender kept (RFC 5321 paths are at most 256 octets; the rest is noise). */
const MAX_STORED_NAME = 512;

export function createInboundHooks(deps: InboundHooksDeps): SmtpHooks {
  const { limits } = deps;
  // smtp-server makes a new envelope for every transaction, so state keyed by it ends with the transaction.
  const admittedByEnvelope = new WeakMap<SMTPServerEnvelope, Map<string, AdmittedRecipient>>();
  const admittedOf = (envelope: SMTPServerEnvelope) => {
    let admitted = admittedByEnvelope.get(envelope);
    if (!admitted) admittedByEnvelope.set(envelope, (admitted = new Map()));
    return admitted;
  };

  return {
    async mailFrom() {
      // Refused before the sender transmits anything: a 10 MB DATA is not read only to be refused.
      if (deps.overloaded()) throw overloaded();
      // Delayed before the sender transmits anything too, and only while storing falls behind; what grew past the
      // bound meanwhile is refused all the same.
      const wait = deps.admitTransaction();
      if (!wait) return;
      await wait;
      if (deps.overloaded()) throw overloaded();
    },

    async rcptTo(recipient, session) {
      const admitted = admittedOf(session.envelope);
      const address = recipient.toLowerCase();
      if (!admitted.has(address) && admitted.size >= limits.maxRecipients) {
        throw new SmtpError(452, "4.5.3", "too many recipients in this transaction, send the rest in another");
      }
      const admission = await deps.admit(address);
      switch (admission.kind) {
        case "admitted":
          admitted.set(address, admission.recipient);
          return;
        case "unknown_mailbox":
          throw new SmtpError(550, "5.1.1", `<${recipient}>: no such mailbox here`);
        case "mailbox_disabled":
          throw new SmtpError(550, "5.2.1", `<${recipient}>: mailbox disabled`);
        case "foreign_domain":
          throw new SmtpError(550, "5.7.1", `<${recipient}>: relaying denied`);
        case "domain_not_verified":
          // DNS trouble past the grace period may pass (the records may be fine): the sender tries again later.
          throw admission.temporary
            ? new SmtpError(450, "4.4.3", `<${recipient}>: the domain's records cannot be checked now, try again later`)
            : new SmtpError(550, "5.7.1", `<${recipient}>: mail for this domain is not accepted`);
      }
    },

    async data(stream, session) {
      const body = await readWithinLimits(stream, limits, deps.bodies);
      let message: ReceivedMessage | undefined;
      let rawId: string;
      try {
        const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
        const envelope: ReceivedEnvelope = {
          mailFrom: mailFrom.slice(0, MAX_STORED_NAME),
          recipients: [...admittedOf(session.envelope).values()],
          session: sessionFacts(session),
        };
        if (body.kind === "memory") rawId = await deps.store((message = { ...envelope, raw: body.bytes }));
        else rawId = await deps.storeSpooled(envelope, body.file, body.size);
      } catch (e) {
        await body.dispose();
        throw e;
      }
      // Handing the message over (its bytes, moved to the processing thread, and a message to it) and releasing its
      // memory or spool file happen after the 250 is written, so the reply waits for the commit alone: a process
      // that dies in between leaves the row pending for the sweeper, as after any 250.
      setImmediate(() => {
        deps.accepted(rawId, body.size, message);
        void body.dispose();
      });
      return `2.0.0 Ok: queued as ${rawId}`;
    },
  };
}

const overloaded = () => new SmtpError(451, "4.3.1", "too much mail waiting to be processed here, try again later");

/** Reads the message, keeping nothing once it is over a limit (the rest is drained, as SMTP requires). */
async function readWithinLimits(stream: SMTPServerDataStream, limits: InboundHooksDeps["limits"], bodies: RawBodies): Promise<RawBody> {
  const structure = new MessageStructureCheck(limits);
  const writer = bodies.start();
  let kept = true;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (kept && stream.sizeExceeded) {
        kept = false;
        await writer.discard();
      }
      if (!kept) continue;
      structure.write(chunk);
      await writer.write(chunk);
    }
  } catch {
    // The client went away mid-message: nobody is left to read a reply, and nothing was stored.
    await writer.discard();
    throw new SmtpError(451, "4.4.2", "connection lost during DATA");
  }
  if (stream.sizeExceeded) {
    throw new SmtpError(552, "5.3.4", `message exceeds the maximum size of ${limits.maxMessageBytes} bytes`);
  }
  const violation = structure.finish();
  if (violation) {
    await writer.discard();
    throw violationReply(violation, limits);
  }
  return writer.finish().catch(() => {
    throw new SmtpError(451, "4.3.1", "insufficient system storage, try again later");
  });
}

function violationReply(violation: LimitViolation, limits: MessageLimits): SmtpError {
  switch (violation) {
    case "header_too_large":
      return new SmtpError(552, "5.3.4", `message header exceeds ${limits.maxHeaderBytes} bytes`);
    case "mime_too_deep":
      return new SmtpError(554, "5.6.0", `MIME parts nested deeper than ${limits.maxMimeDepth} levels`);
    case "too_many_parts":
      return new SmtpError(554, "5.6.0", `message has more than ${limits.maxMimeParts} MIME parts`);
  }
}

function sessionFacts(session: SMTPServerSession): SessionFacts {
  const tls = session.tlsOptions;
  return {
    remoteIp: session.remoteAddress,
    // Typed string by smtp-server but false until HELO/EHLO; DATA cannot come before it.
    helo: (session.hostNameAppearsAs || "").slice(0, MAX_STORED_NAME),
    tls: tls ? { protocol: tls.version, cipher: tls.name } : null,
  };
}
