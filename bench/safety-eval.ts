// `npm run eval:safety`: how well the safety analysis (src/extraction/safety.ts) reads the labelled safety corpus
// (test/fixtures/safety), and separately its held-out fixtures, written after the rules were done and never tuned
// on: precision and recall per warning code, the share of benign mail whose risk is `low`, the share of tricks
// raised to review or high, and how often the risk is the one labelled; then the low rate of the extraction
// corpus (verification mails, replies, decoys) read as more benign mail. `--misses` lists each fixture that
// missed. No network, no database; it only reads files.
import type { WarningCode } from "../src/extraction/types.js";
import {
  ALL_CODES,
  evaluateSafety,
  extractionCorpusLow,
  HELD_OUT_DIR,
  loadSafetyCorpus,
  type SafetyFigures,
} from "../test/fixtures/safety/corpus.js";
import { pct, printMisses } from "./eval-report.js";

function report(title: string, f: SafetyFigures): void {
  console.log(`\n${title}: ${f.fixtures} fixtures (${f.benign} benign)`);
  for (const code of ALL_CODES) {
    const { precision, recall } = f.perCode.get(code as WarningCode)!;
    console.log(`  ${code.padEnd(24)} precision ${pct(precision)}   recall ${pct(recall)}`);
  }
  console.log(`  benign mail at low        ${pct(f.benignLow)}`);
  console.log(`  tricks at review or high  ${pct(f.tricksFlagged)}`);
  console.log(`  risk as labelled          ${pct(f.riskAgrees)}`);
  printMisses(f.misses);
}

report("corpus", evaluateSafety(loadSafetyCorpus()));
report("held-out", evaluateSafety(loadSafetyCorpus(HELD_OUT_DIR)));
const extraction = extractionCorpusLow();
console.log(`\nextraction corpus as benign mail: low ${pct(extraction.low)}`);
printMisses(extraction.raised);
