// Group commit for hot single-row writes: items that arrive while a write is under way wait for it and then go
// together in one statement (one round trip, one commit). A lone item is written at once, so grouping adds no wait
// at low load; under load it spares PostgreSQL a commit per item. Each caller is answered only after the commit of
// its group, and a failed group fails every item of it. A writer whose items come one by one even under load (each
// at its own moment, say as HTTP answers arrive) may ask for a linger instead: a group is written once its first item
// has waited that long, or once it is full, so a few milliseconds of wait buy one commit for many items.

export interface GroupCommitOptions<T> {
  /** Items in one group at most. */
  readonly maxGroup: number;
  /** Writes under way at once; the next group gathers while they run. */
  readonly maxInFlight: number;
  /** A bound on the summed weight of a group (say, bytes); a single heavier item still goes, alone. */
  readonly maxWeight?: number;
  readonly weightOf?: (item: T) => number;
  /**
   * Milliseconds a group's first item waits for more before the group is written (unless it fills up first); 0 (the
   * default) writes at once whenever a write may start.
   */
  readonly lingerMs?: number;
}

interface Waiting<T, R> {
  readonly item: T;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Returns a function that writes one item as part of a group. `write` gets the group in arrival order and answers
 * one result per item, in the same order.
 */
export function groupCommit<T, R>(
  write: (group: readonly T[]) => Promise<readonly R[]>,
  options: GroupCommitOptions<T>,
): (item: T) => Promise<R> {
  const waiting: Waiting<T, R>[] = [];
  let inFlight = 0;
  const lingerMs = options.lingerMs ?? 0;
  /** While set, the waiting group lingers; once it fires (or the group is full) it may be written. */
  let lingering: NodeJS.Timeout | undefined;
  let lingered = lingerMs === 0;

  function nextGroup(): Waiting<T, R>[] {
    const { maxWeight = Infinity, weightOf = () => 0 } = options;
    let weight = 0;
    let n = 0;
    while (n < waiting.length && n < options.maxGroup) {
      weight += weightOf(waiting[n]!.item);
      if (n > 0 && weight > maxWeight) break;
      n++;
    }
    return waiting.splice(0, n);
  }

  /** Whether the waiting items may go now: no linger asked, or their first lingered enough, or a group is full. */
  function mayWrite(): boolean {
    if (lingered || waiting.length >= options.maxGroup) return true;
    lingering ??= setTimeout(() => {
      lingering = undefined;
      lingered = true;
      flush();
    }, lingerMs);
    return false;
  }

  function flush(): void {
    // The linger is checked first: it starts at an item's arrival, even while the writes allowed are all under way.
    while (waiting.length > 0 && mayWrite() && inFlight < options.maxInFlight) {
      const group = nextGroup();
      if (lingerMs > 0 && waiting.length === 0) {
        // The next item starts a linger of its own.
        clearTimeout(lingering);
        lingering = undefined;
        lingered = false;
      }
      inFlight++;
      write(group.map((w) => w.item))
        .then(
          (results) => group.forEach((w, i) => w.resolve(results[i]!)),
          (error: unknown) => group.forEach((w) => w.reject(error)),
        )
        .finally(() => {
          inFlight--;
          flush();
        });
    }
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      flush();
    });
}
