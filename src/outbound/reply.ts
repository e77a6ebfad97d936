// What a reply is addressed to and how it continues its thread: recipients from the target message (spec endpoint
// rule 3, and reply-all), the subject's one "Re: ", and the References chain.
import type { InboxRow } from "../db/entities/inbox.js";
import type { MessageRow, StoredAddress } from "../db/entities/message.js";
import { InvalidRequest } from "../errors.js";
import { parseOutboundAddress, type OutboundAddress } from "./addresses.js";

/** References kept on a reply: the thread's first message and the latest ones (RFC 5322 §3.6.4 allows trimming). */
const MAX_REFERENCES = 20;

export type ReplyTarget = Pick<MessageRow, "direction" | "from" | "to" | "cc" | "replyTo">;

/** A stored address as an outbound one, or undefined when it is not one plain address we may send to. */
function sendable(a: StoredAddress | null | undefined): OutboundAddress | undefined {
  if (!a) return undefined;
  try {
    return parseOutboundAddress({ email: a.email, ...(a.name ? { name: a.name.replace(/[\r\n\t]+/g, " ") } : {}) }, "recipient");
  } catch {
    return undefined;
  }
}

/**
 * The recipients of a reply. Spec endpoint rule 3: an inbound target is answered at its first valid Reply-To
 * mailbox, else its From; an outbound target goes again to all its To recipients except the inbox itself. With
 * replyAll: the target's Reply-To (else From) and every To recipient in To, every Cc recipient in Cc, except the
 * inbox itself, each address once in any letter case (addresses that are not one plain address are left out).
 */
export function replyRecipients(target: ReplyTarget, inbox: Pick<InboxRow, "address">, replyAll = false): { to: OutboundAddress[]; cc: OutboundAddress[] } {
  const own = inbox.address.toLowerCase();
  const seen = new Set<string>([own]);
  const take = (addresses: readonly (StoredAddress | null | undefined)[]): OutboundAddress[] =>
    addresses.flatMap((a) => {
      const r = sendable(a);
      if (!r || seen.has(r.email)) return [];
      seen.add(r.email);
      return [r];
    });
  const answered = () => [sendable(target.replyTo) ?? sendable(target.from)];
  if (!replyAll) {
    if (target.direction === "inbound") {
      const [recipient] = answered();
      if (!recipient) throw new InvalidRequest("the target message has no valid Reply-To or From address to answer", "no_recipients");
      return { to: [recipient], cc: [] };
    }
    const to = take(target.to);
    if (to.length === 0) throw new InvalidRequest("the target message has no recipient other than this inbox", "no_recipients");
    return { to, cc: [] };
  }
  const to = take([...answered(), ...target.to]);
  const cc = take(target.cc ?? []);
  if (to.length === 0 && cc.length === 0) throw new InvalidRequest("the target message has no recipient other than this inbox", "no_recipients");
  // Everyone else was in Cc: the first of them is the one answered.
  return to.length > 0 ? { to, cc } : { to: cc.slice(0, 1), cc: cc.slice(1) };
}

/** One "Re: " in front, never "Re: Re: "; line breaks an inbound subject may carry become spaces. */
export function replySubject(subject: string): string {
  return prefixedSubject("Re: ", /^re:/i, subject);
}

/** One prefix in front of a subject (line breaks an inbound subject may carry become spaces). */
export function prefixedSubject(prefix: string, present: RegExp, subject: string): string {
  const flat = subject.replace(/[\r\n]+/g, " ").trim();
  return present.test(flat) ? flat : `${prefix}${flat}`;
}

/** The target's References plus its Message-ID, trimmed to the first and the latest ids. */
export function replyReferences(target: Pick<MessageRow, "references" | "internetMessageId" | "inReplyTo">): string[] {
  const chain = target.references.length > 0 ? [...target.references] : target.inReplyTo ? [target.inReplyTo] : [];
  const all = [...new Set([...chain, target.internetMessageId])].filter((id) => !/[\r\n]/.test(id));
  return all.length <= MAX_REFERENCES ? all : [all[0]!, ...all.slice(all.length - (MAX_REFERENCES - 1))];
}
