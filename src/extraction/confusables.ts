// Letters that look like Latin ones, for telling a look-alike domain ("pаypal" with a Cyrillic а) from the one it
// imitates. A hand-picked subset of Unicode's confusables (UTS #39, confusables.txt) for the lower-case Latin
// letters and digits that domain names are written in: the Cyrillic, Greek, Armenian and Latin-extension letters
// that render like them in common fonts. Accents are removed before this table is read (NFD), and full-width and
// mathematical letters are folded by NFKC, so neither is listed.

const TABLE: Record<string, string> = {
  // Cyrillic.
  а: "a", в: "b", ь: "b", с: "c", ԁ: "d", е: "e", ё: "e", ҽ: "e", ԍ: "g", һ: "h", і: "i", ї: "i", ј: "j", к: "k", ӏ: "l",
  м: "m", п: "n", о: "o", р: "p", ԛ: "q", г: "r", ѕ: "s", т: "t", ц: "u", ѵ: "v", ԝ: "w", х: "x", у: "y", ү: "y", з: "3",
  // Greek.
  α: "a", β: "b", ϲ: "c", δ: "d", ε: "e", ϵ: "e", η: "n", ι: "i", ί: "i", κ: "k", ν: "v", ο: "o", ό: "o", ρ: "p", ϱ: "p",
  τ: "t", υ: "u", ύ: "u", χ: "x", γ: "y", ω: "w",
  // Armenian.
  ա: "w", հ: "h", ո: "n", ս: "u", օ: "o", ց: "g", զ: "q", լ: "l",
  // Latin extensions and IPA.
  ı: "i", ɩ: "i", ɪ: "i", ȷ: "j", ɡ: "g", ɑ: "a", ɒ: "a", ƅ: "b", ɓ: "b", ɔ: "c", ɗ: "d", ɛ: "e", ƒ: "f", ɦ: "h", ʜ: "h",
  ǀ: "l", ɫ: "l", ɭ: "l", ɱ: "m", ɲ: "n", ɴ: "n", ɵ: "o", ø: "o", ƿ: "p", ʀ: "r", ʂ: "s", ƚ: "l", ʋ: "u", ʏ: "y", ƶ: "z",
  ʐ: "z", ß: "b", ŀ: "l", ł: "l", đ: "d", ħ: "h",
  // Digits read as letters in domain names: g00gle, paypa1.
  "0": "o", "1": "l",
};

const CONFUSABLE = new Map(Object.entries(TABLE));

/** The ASCII letter a character imitates, or the character itself. */
export function latinLookalike(char: string): string {
  return CONFUSABLE.get(char) ?? char;
}

/**
 * Letter pairs that read alike in a domain name: one swapped for the other is a typo a reader misses. Not m/n or
 * o/a: they read apart, and real names differ by them ("notion" and "motion", "discord" and "discard").
 */
export const LOOKALIKE_PAIRS: ReadonlySet<string> = new Set(["il", "li", "uv", "vu", "ce", "ec", "gq", "qg"]);

/** Letter sequences that read as one letter: "rn" as "m", "vv" as "w", "cl" as "d". */
export const LOOKALIKE_SEQUENCES: readonly (readonly [string, string])[] = [
  ["rn", "m"],
  ["vv", "w"],
  ["cl", "d"],
];
