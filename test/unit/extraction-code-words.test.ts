// mayNameCode decides, per line, whether findCodes reads a message at all. It reads ASCII lines by the pieces of
// code words it finds in them (src/extraction/keywords.ts); its answer must be the word-by-word reading's
// (anyWordNamesCode) for every line: the lines of both corpora (held-out too) as they are and upper-cased, and
// seeded fuzzed lines made of code words, their compounds, decoys, word joiners and characters that lower-case
// to something else or to more than one code unit.
import { describe, expect, test } from "vitest";
import { anyWordNamesCode, mayNameCode } from "../../src/extraction/keywords.js";
import { HELD_OUT_DIR as EXTRACTION_HELD_OUT, loadCorpus } from "../fixtures/extraction/corpus.js";
import { HELD_OUT_DIR as SAFETY_HELD_OUT, loadSafetyCorpus } from "../fixtures/safety/corpus.js";

function corpusLines(): string[] {
  const texts: string[] = [];
  for (const f of [...loadCorpus(), ...loadCorpus(EXTRACTION_HELD_OUT), ...loadSafetyCorpus(), ...loadSafetyCorpus(SAFETY_HELD_OUT)]) {
    texts.push(f.subject ?? "", f.text ?? "", f.html ?? "");
  }
  const lines = texts.flatMap((t) => t.split(/\r?\n/));
  return [...lines, ...lines.map((l) => l.toUpperCase())];
}

/** Pieces fuzzed lines are made of: what names a code, what nearly does, what joins or splits words. */
const FRAGMENTS = [
  "code", "Code", "CODE", "codes", "codigo", "código", "passcode", "otp", "OTP", "pin", "PIN", "tan", "2fa", "mfa",
  "verification", "verify", "one", "one-time", "time", "sign", "sign-in", "log", "log-in", "login", "two", "factor",
  "usage", "unique", "un", "solo", "mot", "de", "single", "use", "security", "token", "password", "passwort", "kod",
  "kode", "koodi", "Bestätigungscode", "Sicherheitscode", "verificatiecode", "einmalpasswort", "rabattcode", "barcode",
  "unicode", "decode", "promo", "zip", "order", "invoice", "код", "验证码", "認証コード", "인증번호", "ワンタイム",
  "X-PIN", "sms-tan", "kennwort", "anmelden", "senha", "clave", "acceso", "weryfikacyjny", "подтверждения",
  "the", "your", "is", "482913", "A7K-9QZ", "run", "fun", "done", "blog", "motto", "singles", "sunny",
  " ", " ", " ", "  ", "-", "_", "'", "’", "°", ".", ",", ":", "\t", "/", "@", "(", ")", "é", "İ", "K", "ß", "ſ", "Σ",
  "\u00a0", "\u200b", "😀", "\ud800", "ﬁ", "Ω",
];

describe("mayNameCode", () => {
  test("answers as reading every word does, for every line of both corpora", () => {
    const lines = corpusLines();
    const differing = lines.filter((l) => mayNameCode(l) !== anyWordNamesCode(l));
    expect(differing).toEqual([]);
    // Both answers occur often: the comparison is not of lines that all say no.
    expect(lines.filter((l) => mayNameCode(l)).length).toBeGreaterThan(200);
    expect(lines.filter((l) => !mayNameCode(l)).length).toBeGreaterThan(2000);
  });

  test("answers as reading every word does, for seeded fuzzed lines", () => {
    // A fixed linear congruential sequence: the same lines every run.
    let seed = 20261127;
    const random = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
    const differing: string[] = [];
    let named = 0;
    const LINES = 40_000;
    for (let k = 0; k < LINES; k++) {
      let line = "";
      const count = random(12);
      for (let p = 0; p < count; p++) line += FRAGMENTS[random(FRAGMENTS.length)];
      if (random(5) === 0) line = line.toUpperCase();
      const answer = mayNameCode(line);
      if (answer) named++;
      if (answer !== anyWordNamesCode(line)) differing.push(line);
    }
    expect(differing).toEqual([]);
    expect(named).toBeGreaterThan(LINES / 10);
    expect(named).toBeLessThan(LINES - LINES / 10);
  });

  test("reads the word a piece is in as a whole, from its first letter or digit", () => {
    expect(mayNameCode("Your code: 482913")).toBe(true);
    expect(mayNameCode("__code")).toBe(true);
    expect(mayNameCode("Rabattcode SAVE20")).toBe(false);
    expect(mayNameCode("unicode decode barcode")).toBe(false);
    expect(mayNameCode("run the usage report, then one barcode")).toBe(true);
    expect(mayNameCode("Sicherheitscode-")).toBe(true);
    expect(mayNameCode("the quick brown fox")).toBe(false);
  });
});
