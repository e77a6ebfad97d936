// Values computed from a key and kept per process (a decoded key, a host name's parts), bounded so that hostile input
// cannot grow them: at most `max` entries, all dropped when full. Cheaper than least-recently-used bookkeeping, and
// what is in use is computed again at once. Plain erasable TypeScript: the parser threads load it without tsx.
export class BoundedMemo<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  /** The value kept for `key`, else `compute(key)`, kept. */
  get(key: K, compute: (key: K) => V): V {
    let value = this.#entries.get(key);
    if (value === undefined) {
      value = compute(key);
      if (this.#entries.size >= this.#max) this.#entries.clear();
      this.#entries.set(key, value);
    }
    return value;
  }

  /** Drops every value kept (a closed owner lets go of its keys). */
  clear(): void {
    this.#entries.clear();
  }
}
