// A small deterministic generator (mulberry32) for tests over generated input, so that a failure is reproduced by
// its seed.

export interface Random {
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
  bytes(n: number): Buffer;
}

export function random(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return {
    int,
    pick: (items) => items[int(items.length)]!,
    chance: (p) => next() < p,
    bytes: (n) => Buffer.from(Array.from({ length: n }, () => int(256))),
  };
}
