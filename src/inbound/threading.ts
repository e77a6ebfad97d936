// Threading as a pure function: which earlier messages a new one answers. The lookup of those messages in the inbox
// is the inbound store's (one indexed query per batch); what a thread's summary becomes when a message joins it is
// the threads table's rule (src/db/tables/threads.ts).

export interface ReplyHeaders {
  readonly inReplyTo: string | null;
  /** Oldest first, as the References header lists them. */
  readonly references: readonly string[];
}

/**
 * The Message-IDs a message answers, most telling first: In-Reply-To names the direct parent; References lists
 * the ancestry oldest first, so it is read backwards. Duplicates are dropped.
 */
export function parentMessageIds(headers: ReplyHeaders): string[] {
  const ids = [headers.inReplyTo, ...[...headers.references].reverse()].filter((id): id is string => !!id);
  return [...new Set(ids)];
}
