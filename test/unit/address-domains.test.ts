// The domains of an address-list field (src/authentication/header-fields.ts, DMARC's From domain and Reply-To's):
// the same answer whether the value is parsed afresh or remembered from an earlier message, and a remembered answer
// no caller can change.
import { expect, test } from "vitest";
import { addressDomains } from "../../src/authentication/header-fields.js";

test("a value asked again answers the same domains, in A-labels, nulls for what is not a domain name", () => {
  const value = `"Bench Sender" <bench-sender@Load.Example>, undisclosed:;, Ünïcode <u@bücher.example>, <x@[192.0.2.1]>`;
  const first = addressDomains(value);
  expect(first).toEqual(["load.example", "xn--bcher-kva.example", null]);
  expect(addressDomains(value)).toEqual(first);
  expect(addressDomains(` ${value}`)).toEqual(first);
});

test("a remembered answer is frozen: a caller that changed it would change every later message's From domain", () => {
  const value = "Sender <a@frozen.example>";
  const domains = addressDomains(value) as (string | null)[];
  expect(() => domains.push("forged.example")).toThrow(TypeError);
  expect(addressDomains(value)).toEqual(["frozen.example"]);
});

test("a value longer than a line is parsed, not kept, and answers as a short one would", () => {
  const many = Array.from({ length: 60 }, (_, i) => `user${i}@long${i % 3}.example`).join(", ");
  expect(many.length).toBeGreaterThan(998);
  const domains = addressDomains(many);
  expect(domains).toHaveLength(60);
  expect(new Set(domains)).toEqual(new Set(["long0.example", "long1.example", "long2.example"]));
  expect(addressDomains(many)).toEqual(domains);
});
