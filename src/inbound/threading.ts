// Threading as pure functions: which earlier messages a new one answers, and what a thread's summary becomes when
// a message joins it. The lookup of those messages in the inbox is the processor's (one indexed query).

export interface ReplyHeaders {
  readonly inReplyTo: string | null;
  /** Oldest first, as the References header lists them. */
  readonly references: readonly string[];
}

export interface ThreadSummary {
  readonly subject: string;
  /** Lower-cased addresses in order of first appearance. */
  readonly participants: readonly string[];
  readonly messageCount: number;
  readonly lastMessageAt: Date;
}

export interface JoiningMessage {
  readonly subject: string;
  readonly addresses: readonly string[];
  readonly at: Date;
}

/**
 * The Message-IDs a message answers, most telling first: In-Reply-To names the direct parent; References lists
 * the ancestry oldest first, so it is read backwards. Duplicates are dropped.
 */
export function parentMessageIds(headers: ReplyHeaders): string[] {
  const ids = [headers.inReplyTo, ...[...headers.references].reverse()].filter((id): id is string => !!id);
  return [...new Set(ids)];
}

/** Participants after adding addresses: lower-cased, each once, earlier ones first. */
export function mergeParticipants(existing: readonly string[], addresses: readonly string[]): string[] {
  const merged = new Set(existing);
  for (const address of addresses) {
    const normalized = address.trim().toLowerCase();
    if (normalized) merged.add(normalized);
  }
  return [...merged];
}

/**
 * The summary of a thread once a message joined it; null starts a new thread. A thread keeps the subject of its
 * first message (replies add "Re:" and the like).
 */
export function summaryWith(thread: ThreadSummary | null, message: JoiningMessage): ThreadSummary {
  if (thread === null) {
    const participants = mergeParticipants([], message.addresses);
    return { subject: message.subject, participants, messageCount: 1, lastMessageAt: message.at };
  }
  return {
    subject: thread.subject,
    participants: mergeParticipants(thread.participants, message.addresses),
    messageCount: thread.messageCount + 1,
    lastMessageAt: message.at > thread.lastMessageAt ? message.at : thread.lastMessageAt,
  };
}
