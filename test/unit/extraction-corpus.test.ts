// The extraction corpus as a table: every fixture's codes, action link and reply text as its file says
// (test/fixtures/extraction/*.fixture; `npm run eval:extraction` prints the same corpus as precision and recall).
import { describe, expect, test } from "vitest";
import { actionLink, extract, HELD_OUT_DIR, loadCorpus } from "../fixtures/extraction/corpus.js";

const corpus = loadCorpus();

describe("the extraction corpus", () => {
  test("holds at least sixty fixtures of each family: codes, links, decoys, replies and forwards", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(60);
    for (const family of ["code-", "link-", "decoy-", "reply-", "fwd-"]) {
      expect(corpus.filter((f) => f.name.startsWith(family)).length, family).toBeGreaterThanOrEqual(3);
    }
  });

  test.each(corpus.map((f) => [f.name, f] as const))("%s", (_name, f) => {
    const result = extract(f);
    const codes = result.codes.map((c) => c.value);
    // The most likely code first, and nothing that is not a code.
    const codesRight = codes[0] === f.codes[0] && codes.every((c) => f.codes.includes(c));
    expect(codesRight, `codes ${JSON.stringify(codes)}`).toBe(!f.knownMisses.includes("codes"));
    for (const code of result.codes) {
      expect(code.confidence).toBeGreaterThan(0);
      expect(code.confidence).toBeLessThanOrEqual(1);
      expect(code.context.length).toBeLessThanOrEqual(120);
    }
    if (f.link !== undefined) {
      const marked = actionLink(result);
      expect(marked === f.link, `action link ${marked}`).toBe(!f.knownMisses.includes("link"));
      if (f.linkKind) expect(result.links.find((l) => l.url === f.link)?.kind).toBe(f.linkKind);
    }
    for (const prefix of f.absentLinks) expect(result.links.map((l) => l.url).filter((u) => u.startsWith(prefix))).toEqual([]);
    for (const link of result.links) {
      expect(new URL(link.url).protocol).toMatch(/^https?:$/);
      expect(link.domain).toBe(new URL(link.url).hostname);
    }
    expect(new Set(result.links.map((l) => l.url)).size).toBe(result.links.length);
    if (f.reply !== undefined) expect(result.replyText === f.reply, result.replyText).toBe(!f.knownMisses.includes("reply"));
  });
});

describe("the held-out fixtures", () => {
  // Written after the rules were done and not tuned against: only that they extract, not what (the figures are
  // reported separately by npm run eval:extraction).
  test.each(loadCorpus(HELD_OUT_DIR).map((f) => [f.name, f] as const))("%s extracts without failing", (_name, f) => {
    const result = extract(f);
    expect(typeof result.replyText).toBe("string");
    expect(result.codes.length).toBeLessThanOrEqual(5);
  });
});
