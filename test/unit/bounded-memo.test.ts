import { expect, test } from "vitest";
import { BoundedMemo } from "../../src/bounded-memo.js";

test("computes a key's value once, keeps at most max values, and drops them all when full", () => {
  const computed: string[] = [];
  const memo = new BoundedMemo<string, string>(2);
  const upper = (key: string) => (computed.push(key), key.toUpperCase());
  expect(memo.get("a", upper)).toBe("A");
  expect(memo.get("a", upper)).toBe("A");
  expect(memo.get("b", upper)).toBe("B");
  expect(computed).toEqual(["a", "b"]);
  // Full: a third key drops both, so "a" is computed again, and "c" is kept.
  expect(memo.get("c", upper)).toBe("C");
  expect(memo.get("c", upper)).toBe("C");
  expect(memo.get("a", upper)).toBe("A");
  expect(computed).toEqual(["a", "b", "c", "a"]);
  memo.clear();
  memo.get("c", upper);
  expect(computed).toEqual(["a", "b", "c", "a", "c"]);
});
