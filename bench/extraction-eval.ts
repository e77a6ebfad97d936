// `npm run eval:extraction`: precision and recall of message extraction over the fixture corpus
// (test/fixtures/extraction), and separately over the held-out fixtures written after the rules were done:
// one-time codes (top-1 and any), the marked verification / sign-in / reset link, and replyText (exact and with
// whitespace normalised). `--misses` lists each fixture that missed. No network, no database; it only reads files.
import { evaluate, HELD_OUT_DIR, loadCorpus, type Figures } from "../test/fixtures/extraction/corpus.js";
import { pct, printMisses } from "./eval-report.js";

function report(title: string, f: Figures): void {
  console.log(`\n${title}: ${f.fixtures} fixtures`);
  console.log(`  codes, top-1     precision ${pct(f.codesTop1Precision)}   recall ${pct(f.codesTop1Recall)}`);
  console.log(`  codes, any       precision ${pct(f.codesAnyPrecision)}   recall ${pct(f.codesAnyRecall)}`);
  console.log(`  action link      precision ${pct(f.linkPrecision)}   recall ${pct(f.linkRecall)}`);
  console.log(`  replyText        exact     ${pct(f.replyExact)}   normalised ${pct(f.replyNormalised)}`);
  printMisses(f.misses);
}

report("corpus", evaluate(loadCorpus()));
report("held-out", evaluate(loadCorpus(HELD_OUT_DIR)));
