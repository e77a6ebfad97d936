// The benchmarks' BENCH_* settings: read from the environment once, bounded, and refused with a clear message.

type Env = Readonly<Record<string, string | undefined>>;

/** `name` as a number from min to max (an integer unless `integer` is false); `fallback` when unset or empty. */
export function envNumber(env: Env, name: string, fallback: number, min: number, max: number, integer = true): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!(n >= min && n <= max) || (integer && !Number.isInteger(n))) {
    throw new Error(`${name} must be ${integer ? "an integer" : "a number"} from ${min} to ${max}`);
  }
  return n;
}

/** `name` as a comma-separated list of `known` names (case-insensitive), each mapped; all of them when unset. */
export function envList<T>(env: Env, name: string, known: readonly string[], map: (name: string) => T): T[] {
  const names = (env[name] || known.join(",")).split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "");
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0) throw new Error(`${name}: unknown ${unknown.join(", ")}; known: ${known.join(", ")}`);
  return names.map(map);
}
