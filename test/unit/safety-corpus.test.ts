// The safety corpus as a table (test/fixtures/safety/*.fixture; `npm run eval:safety` prints the same corpus as
// precision and recall): every fixture's warnings and risk as its file says, and the figures of the held-out set
// (written after the rules, never tuned on) held at what was measured when it was first read.
import { describe, expect, test } from "vitest";
import { MAX_EVIDENCE_CHARS } from "../../src/extraction/limits.js";
import type { WarningCode } from "../../src/extraction/types.js";
import { percent, type Ratio } from "../fixtures/fixture-file.js";
import {
  codesOf,
  evaluateSafety,
  extractionCorpusLow,
  HELD_OUT_DIR,
  loadSafetyCorpus,
  read,
  TRICK_CODES,
} from "../fixtures/safety/corpus.js";

const corpus = loadSafetyCorpus();
const heldOut = loadSafetyCorpus(HELD_OUT_DIR);

describe("the safety corpus", () => {
  test("holds tricks of every class, sender findings and benign mail", () => {
    for (const family of ["hidden-", "invisible-", "mismatch-", "lookalike-", "instruction-", "sender-"]) {
      expect(corpus.filter((f) => f.name.startsWith(family)).length, family).toBeGreaterThanOrEqual(3);
    }
    expect(corpus.filter((f) => f.benign).length).toBeGreaterThanOrEqual(60);
    for (const code of TRICK_CODES) expect(corpus.filter((f) => f.expected.has(code)).length, code).toBeGreaterThanOrEqual(20);
  });

  test.each(corpus.map((f) => [f.name, f] as const))("%s", (_name, f) => {
    const result = read(f);
    const got = codesOf(result);
    for (const code of new Set<WarningCode>([...got, ...f.expected])) {
      // A known miss is expected to stay a miss until a rule fixes it (then its label says so).
      expect(got.has(code), code).toBe(f.expected.has(code) !== f.knownMisses.has(code));
    }
    if (f.knownMisses.size === 0) expect(result.risk).toBe(f.risk);
    if (f.benign) expect(result.safeText.length).toBeGreaterThan(0);
    for (const w of result.warnings) expect(w.evidence.length).toBeLessThanOrEqual(MAX_EVIDENCE_CHARS);
  });
});

/**
 * Floors at the figures the held-out set (the seventh, test/fixtures/safety/held-out) gave when it was first read
 * (npm run eval:safety, held-out), not revised on since: under the 90% target for hidden text, look-alikes and
 * instructions, and for benign mail, as its commit says. (Each floor is the measured ratio, a hair under.)
 */
const HELD_OUT_FLOORS: Record<string, { precision: number; recall: number }> = {
  hidden_text: { precision: 100, recall: 82.3 },
  invisible_characters: { precision: 100, recall: 91.6 },
  link_text_mismatch: { precision: 100, recall: 100 },
  lookalike_domain: { precision: 100, recall: 78.9 },
  instruction_like: { precision: 80.9, recall: 51.5 },
  sender_unauthenticated: { precision: 100, recall: 100 },
};
const HELD_OUT_BENIGN_LOW = 89.4;

describe("the held-out set", () => {
  const figures = evaluateSafety(heldOut);
  const at = (ratio: Ratio) => percent(ratio) ?? 100;

  test("has tricks of every class and benign mail, written after the rules", () => {
    expect(heldOut.length).toBeGreaterThanOrEqual(100);
    expect(heldOut.filter((f) => f.benign).length).toBeGreaterThanOrEqual(30);
    for (const code of TRICK_CODES) expect(heldOut.filter((f) => f.expected.has(code)).length, code).toBeGreaterThanOrEqual(8);
  });

  test.each(Object.entries(HELD_OUT_FLOORS))("%s keeps its precision and recall", (code, floor) => {
    const { precision, recall } = figures.perCode.get(code as WarningCode)!;
    expect(at(precision)).toBeGreaterThanOrEqual(floor.precision);
    expect(at(recall)).toBeGreaterThanOrEqual(floor.recall);
  });

  test("benign mail stays low", () => {
    expect(at(figures.benignLow)).toBeGreaterThanOrEqual(HELD_OUT_BENIGN_LOW);
  });

  test("the extraction corpus, read as more benign mail, stays low", () => {
    expect(at(extractionCorpusLow().low)).toBe(100);
  });
});
