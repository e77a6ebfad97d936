// messages.extracted as a row keeps it (src/db/tables/messages.ts): a reply or safe text equal to the row's text
// trimmed is left out, and reading the row puts back exactly what was made, whatever the text's whitespace.
import { describe, expect, test } from "vitest";
import { extractedOf, storedExtracted } from "../../src/db/tables/messages.js";
import type { Extracted } from "../../src/extraction/index.js";

const extraction = (replyText: string, safeText: string): Extracted => ({ replyText, codes: [], links: [], safeText, warnings: [], risk: "low" });

/** Through the column and back: JSON text in, parsed JSON out. */
const roundTrip = (e: Extracted, text: string) => extractedOf(JSON.parse(JSON.stringify(storedExtracted(e, text))), text);

describe("storedExtracted and extractedOf", () => {
  const texts = [
    "Hello",
    "\r\n  Hello,\r\n\tagent.  \r\n\r\n",
    "\n\nline one\nline two\n\n\n",
    "\u00a0\ufeffno-break and BOM around\u2028\u3000",
    "",
    "   ",
  ];
  test.each(texts)("leaves out the texts equal to the text trimmed and puts them back exactly: %j", (text) => {
    const trimmed = text.trim();
    const both = extraction(trimmed, trimmed);
    expect(storedExtracted(both, text)).toMatchObject({ replyText: null, safeText: null });
    expect(roundTrip(both, text)).toEqual(both);
    const replyOnly = extraction(trimmed, `${trimmed} [https://example.com/]`);
    expect(storedExtracted(replyOnly, text)).toMatchObject({ replyText: null, safeText: replyOnly.safeText });
    expect(roundTrip(replyOnly, text)).toEqual(replyOnly);
  });

  test("keeps texts that differ from the text trimmed, even by whitespace or a cut", () => {
    const text = "  Hello agent,\nthe report.\n";
    for (const other of [" Hello agent,\nthe report.", "Hello agent,\nthe report.\n", "Hello agent,", "Hello agent,\r\nthe report."]) {
      const e = extraction(other, other);
      expect(storedExtracted(e, text)).toBe(e);
      expect(roundTrip(e, text)).toEqual(e);
    }
  });

  test("keeps both texts when the text holds a lone surrogate, which PostgreSQL would not store as it is", () => {
    const text = "broken \ud800 pair";
    const e = extraction(text, text);
    expect(storedExtracted(e, text)).toBe(e);
    // A pair is well formed: left out as usual.
    expect(storedExtracted(extraction("pair \ud83d\ude00", "pair \ud83d\ude00"), "pair \ud83d\ude00")).toMatchObject({ replyText: null, safeText: null });
  });

  test("reads rows stored before: texts in full, and no safe text at all before the safety analysis", () => {
    const full = extraction("Hi", "Hi");
    expect(extractedOf(full, "something else")).toEqual(full);
    const beforeSafety = { replyText: "Hi", codes: [], links: [] } as unknown as Parameters<typeof extractedOf>[0];
    expect(extractedOf(beforeSafety, "Hi")).toEqual({ replyText: "Hi", codes: [], links: [] });
  });
});
