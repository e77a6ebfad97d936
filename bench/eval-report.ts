// What the corpus evaluations (`npm run eval:extraction`, `npm run eval:safety`) print alike: a ratio as a
// percentage with its counts, and the fixtures that missed (listed with `--misses`, else counted).
import { percent, type Ratio } from "../test/fixtures/fixture-file.js";

const showMisses = process.argv.includes("--misses");

/** "  97.5% (39/40)", or a dash when there is nothing to count. */
export function pct(ratio: Ratio): string {
  const value = percent(ratio);
  return value === null ? "     –" : `${value.toFixed(1).padStart(5)}% (${ratio.hits}/${ratio.of})`;
}

export function printMisses(misses: readonly string[]): void {
  if (showMisses) for (const miss of misses) console.log(`    miss: ${miss}`);
  else if (misses.length > 0) console.log(`  (${misses.length} misses; --misses lists them)`);
}
