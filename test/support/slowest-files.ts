// The test loop's own instruments: a reporter that ends each run with its slowest files, and a sequencer that
// starts the files known to be slow first, so that a fresh clone (no timings cached yet) does not leave the longest
// file for last and wait on it alone.
import { relative } from "node:path";
import { BaseSequencer, type Reporter, type TestModule, type TestSpecification } from "vitest/node";

const SHOWN = 10;

/** Prints the slowest test files of the run: wall time from the file's start to its end, and its share in tests. */
export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const rows = testModules
      .map((m) => {
        const d = m.diagnostic();
        return { file: m.relativeModuleId, total: d.collectDuration + d.duration, import: d.collectDuration, tests: d.duration };
      })
      .sort((a, b) => b.total - a.total)
      .slice(0, SHOWN);
    if (rows.length === 0) return;
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`.padStart(8);
    const width = Math.max(...rows.map((r) => r.file.length));
    const lines = rows.map((r) => `  ${r.file.padEnd(width)} ${s(r.total)}  (import ${s(r.import).trim()}, tests and hooks ${s(r.tests).trim()})`);
    process.stdout.write(`\n Slowest ${rows.length} test files\n${lines.join("\n")}\n`);
  }
}

/**
 * The files that took longest in recent runs (the reporter above lists them), most costly first. Timings vitest
 * has cached from an earlier run order the rest, as its own sequencer does. The two memory files take turns
 * (test/support/large-mail-role.ts): the second comes once the first of the others has ended, so that it waits little.
 */
export const KNOWN_SLOW = [
  "test/e2e/smtp-memory.test.ts",
  "test/e2e/faults.test.ts",
  "test/e2e/schemathesis.test.ts",
  "test/e2e/smtp-memory-large-mail.test.ts",
  "test/deploy/helm-chart.test.ts",
  "test/e2e/attachment-scan.test.ts",
  "test/e2e/temporal-outage.test.ts",
  "test/e2e/roles-scale-out.test.ts",
  "test/e2e/drain.test.ts",
  "test/e2e/start.test.ts",
  "test/e2e/external-tls.test.ts",
];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = KNOWN_SLOW.indexOf(relative(this.ctx.config.root, spec.moduleId));
      return at === -1 ? KNOWN_SLOW.length : at;
    };
    // Array.prototype.sort is stable: the rest keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
