// `node --import tsx bench/extraction-dump.ts <file>`: every extraction output of the corpora (test/fixtures/extraction
// and test/fixtures/safety, held-out too) and of 6,000 seeded fuzzed texts (pieces of the fixtures mixed, upper-cased,
// with look-alike, invisible and CJK characters dropped in: findInstructions, and extractMessage on text and on HTML)
// written to <file>, one JSON line each, and their SHA-256 printed. Run it before and after a change that must not
// change results, and compare the files (cmp): a finer check than eval:extraction and eval:safety's figures.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { extractMessage } from "../src/extraction/index.js";
import { findInstructions } from "../src/extraction/instructions.js";
import { extract, HELD_OUT_DIR as EXTRACTION_HELD_OUT, loadCorpus } from "../test/fixtures/extraction/corpus.js";
import { HELD_OUT_DIR as SAFETY_HELD_OUT, loadSafetyCorpus, read } from "../test/fixtures/safety/corpus.js";

const file = process.argv[2];
if (!file) throw new Error("usage: bench/extraction-dump.ts <file>");
const out: string[] = [];
const texts: string[] = [];
for (const f of [...loadCorpus(), ...loadCorpus(EXTRACTION_HELD_OUT)]) {
  out.push(JSON.stringify(extract(f)));
  texts.push(f.text ?? "", f.html ?? "");
}
for (const f of [...loadSafetyCorpus(), ...loadSafetyCorpus(SAFETY_HELD_OUT)]) {
  out.push(JSON.stringify(read(f)));
  texts.push(f.text ?? "", f.html ?? "");
}

// A fixed linear congruential sequence: the same texts every run.
let seed = 12345;
const random = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
const pool = texts.filter((t) => t).join("\n");
const EXTRAS = ["é", "İ", "ß", "ＡＩ", "іgnore", "\u200b", "½", "Ⅻ", "ﬁ", "😀", "\ud800", "Ω", "код", "验证码", "ñ"];
const FUZZED = 6000;
for (let k = 0; k < FUZZED; k++) {
  let text = "";
  const pieces = 1 + random(6);
  for (let p = 0; p < pieces; p++) {
    const at = random(Math.max(1, pool.length - 400));
    text += pool.slice(at, at + random(400));
    if (random(3) === 0) text += EXTRAS[random(EXTRAS.length)];
    if (random(4) === 0) text = text.toUpperCase();
  }
  out.push(JSON.stringify(findInstructions(text)));
  out.push(JSON.stringify(extractMessage({ text, subject: text.slice(0, 40), from: "a@b.example" })));
  if (k % 3 === 0) out.push(JSON.stringify(extractMessage({ html: `<p>${text}</p>`, text: null, subject: "x" })));
}
writeFileSync(file, out.join("\n"));
console.log(`${out.length} outputs, sha256 ${createHash("sha256").update(out.join("\n")).digest("hex")}`);
