// Bounds on what callers hold open in this process (waits, streams): so many per API key, so many in all.
import { RateLimited, Unavailable } from "../errors.js";

export interface HoldLimits {
  readonly perKey: number;
  readonly perProcess: number;
  /** The 429's error code when a key holds perKey already (too_many_waits, too_many_streams). */
  readonly errorCode: string;
  /** What is held, for the refusal's message ("waits"). */
  readonly noun: string;
}

export interface Holds {
  /**
   * Takes a hold for the key, or refuses: 429 with the limits' code when the key holds perKey already, 503 when the
   * process holds perProcess. Returns the hold's release (which may be called more than once).
   */
  acquire(keyId: string): () => void;
}

export function createHolds(limits: HoldLimits): Holds {
  const byKey = new Map<string, number>();
  let total = 0;
  return {
    acquire(keyId) {
      const held = byKey.get(keyId) ?? 0;
      if (held >= limits.perKey) {
        throw new RateLimited(`this key holds ${limits.perKey} ${limits.noun} at once already, its most`, 1, limits.errorCode);
      }
      if (total >= limits.perProcess) throw new Unavailable("unavailable", `this server holds its most ${limits.noun}; retry shortly`, 1);
      byKey.set(keyId, held + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = byKey.get(keyId)! - 1;
        if (left === 0) byKey.delete(keyId);
        else byKey.set(keyId, left);
      };
    },
  };
}
