// Sender rules judged as inbound storing judges them (src/senders/sender-rules.ts), and the contract's bounds on
// their entries (buf.validate in sender_rule_service.proto), through the validator every face runs.
import { create } from "@bufbuild/protobuf";
import { createValidator } from "@bufbuild/protovalidate";
import { describe, expect, test } from "vitest";
import { UpdateInboxSenderRulesRequestSchema } from "../../gen/mailbox/v1/sender_rule_service_pb.js";
import { judgeSender, normalizedRules, senderOf, type Sender } from "../../src/senders/sender-rules.js";

const rules = (allow: string[], block: string[], requireAuthenticated = false) => ({ allow, block, requireAuthenticated });
const forged = (address: string): Sender => senderOf(address, null);
const proven = (address: string): Sender => senderOf(address, { senderAuthenticated: true, fromDomain: address.split("@")[1]! });

describe("judging a sender", () => {
  test.each([
    ["no rules take everyone", undefined, forged("a@x.example"), "none"],
    ["empty rules take everyone", rules([], []), forged("a@x.example"), "none"],
    ["a blocked domain refuses its mail", rules([], ["x.example"]), forged("a@x.example"), "blocked"],
    ["a blocked domain refuses its subdomains' mail", rules([], ["x.example"]), forged("a@mail.x.example"), "blocked"],
    ["a blocked domain does not refuse a domain that merely ends like it", rules([], ["x.example"]), forged("a@box.example"), "none"],
    ["a blocked address refuses that address in any letter case", rules([], ["boss@x.example"]), forged("Boss@X.Example"), "blocked"],
    ["a blocked address leaves its domain's other addresses", rules([], ["boss@x.example"]), forged("clerk@x.example"), "none"],
    ["an allow entry allows", rules(["x.example"], []), forged("a@x.example"), "allowed"],
    ["an allow list refuses whom it does not name", rules(["x.example"], []), forged("a@y.example"), "blocked"],
    ["a block entry wins over an allow entry", rules(["x.example"], ["a@x.example"]), forged("a@x.example"), "blocked"],
    ["requireAuthenticated refuses an unauthenticated sender", rules([], [], true), forged("a@x.example"), "blocked"],
    ["requireAuthenticated takes an authenticated one", rules([], [], true), proven("a@x.example"), "none"],
    ["requireAuthenticated refuses a forged allowed address", rules(["x.example"], [], true), forged("a@x.example"), "blocked"],
    ["requireAuthenticated with an allow list allows the proven domain", rules(["x.example"], [], true), proven("a@x.example"), "allowed"],
    ["the null sender of a message without From matches no entry", rules([], ["x.example"]), forged(""), "none"],
  ] as const)("%s", (_what, given, sender, outcome) => {
    expect(judgeSender(given, sender)).toBe(outcome);
  });

  test("matches an internationalised From domain by its A-labels", () => {
    expect(senderOf("anna@bücher.example", null)).toEqual({ address: "anna@xn--bcher-kva.example", domain: "xn--bcher-kva.example", authenticated: false });
    expect(judgeSender(rules([], ["xn--bcher-kva.example"]), senderOf("anna@BÜCHER.example", null))).toBe("blocked");
  });

  test("takes the domain DMARC proved for an authenticated sender", () => {
    expect(senderOf("Info@News.Example.COM", { senderAuthenticated: true, fromDomain: "news.example.com" })).toEqual({
      address: "info@news.example.com",
      domain: "news.example.com",
      authenticated: true,
    });
    expect(senderOf("info@news.example.com", { senderAuthenticated: false, fromDomain: "news.example.com" }).authenticated).toBe(false);
  });

  test("stores entries lower-cased, each once, in the order given", () => {
    expect(normalizedRules(rules(["B.example", "b.example", "a@X.example"], ["Z.example"], true))).toEqual(rules(["b.example", "a@x.example"], ["z.example"], true));
  });
});

describe("the contract's bounds on entries", () => {
  const validator = createValidator();
  const violations = (allow: string[], block: string[] = []) => {
    const result = validator.validate(UpdateInboxSenderRulesRequestSchema, create(UpdateInboxSenderRulesRequestSchema, { inboxId: `inb_${"a".repeat(24)}`, rules: { allow, block } }));
    return result.kind === "invalid" ? result.violations.map((v) => v.message) : [];
  };

  test("accepts addresses, domains, A-labels and a top-level domain", () => {
    expect(violations(["a@example.com", "example.com", "mail.xn--bcher-kva.example", "xyz", "first.last+tag@sub.example.org"])).toEqual([]);
  });

  test.each([
    ["a URL", "https://example.com"],
    ["a wildcard", "*.example.com"],
    ["a domain in Unicode", "bücher.example"],
    ["a space", "a b@example.com"],
    ["an address without a domain", "someone@"],
    ["a label starting with a hyphen", "-x.example"],
  ])("refuses %s with a message that says what an entry is", (_what, entry) => {
    expect(violations([], [entry])).toEqual([
      "must be an address (name@example.com) or a domain (example.com), domains in ASCII (xn-- for internationalised names)",
    ]);
  });

  test("refuses more than 1,000 entries, an entry longer than 254 characters and a repeated entry", () => {
    const many = Array.from({ length: 1001 }, (_, i) => `d${i}.example`);
    expect(violations(many)).toHaveLength(1);
    expect(violations([`${"a".repeat(250)}.com`])).toHaveLength(1);
    expect(violations(["x.example", "x.example"])).toHaveLength(1);
  });
});
