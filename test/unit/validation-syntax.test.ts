// Address syntax: a table of tricky addresses, each with where it comes from.
import { describe, expect, test } from "vitest";
import { parseAddress } from "../../src/validation/syntax.js";

describe("addresses an SMTP server accepts", () => {
  test.each([
    // The everyday forms, case-folded.
    ["simple@example.com", "simple@example.com"],
    ["Very.Common@Example.COM", "very.common@example.com"],
    ["disposable.style.email.with+symbol@example.com", "disposable.style.email.with+symbol@example.com"],
    ["x@example.com", "x@example.com"],
    // Every atext character of RFC 5322 §3.2.3 is allowed unquoted.
    ["!#$%&'*+-/=?^_`{|}~@example.org", "!#$%&'*+-/=?^_`{|}~@example.org"],
    ["user%example.com@example.org", "user%example.com@example.org"],
    ["  padded@example.com  ", "padded@example.com"],
    // Quoted local parts (RFC 5321 §4.1.2); a quoted dot-string is the same mailbox written unquoted.
    ['"simple"@example.com', "simple@example.com"],
    ['"john..doe"@example.org', '"john..doe"@example.org'],
    ['"a b"@example.com', '"a b"@example.com'],
    [
      // The classic from RFC 3696 errata and Wikipedia's list: specials, escaped quotes and an escaped backslash.
      '"very.(),:;<>[]\\".VERY.\\"very@\\\\ \\"very\\".unusual"@strange.example.com',
      '"very.(),:;<>[]\\".very.\\"very@\\\\ \\"very\\".unusual"@strange.example.com',
    ],
    // Internationalised addresses (RFC 6531 §3.3): UTF-8 local parts, IDN domains as A-labels.
    ["Pelé@example.com", "pelé@example.com"],
    ["用户@例子.广告", "用户@xn--fsqu00a.xn--4rr70v"],
    ["user@Bücher.de", "user@xn--bcher-kva.de"],
    // Address literals (RFC 5321 §4.1.3).
    ["postmaster@[192.0.2.1]", "postmaster@[192.0.2.1]"],
    ["postmaster@[IPv6:2001:DB8::1]", "postmaster@[IPv6:2001:db8::1]"],
    // Length limits are inclusive: a 64-octet local part, a 254-octet address (RFC 5321 §4.5.3.1).
    [`${"a".repeat(64)}@example.com`, `${"a".repeat(64)}@example.com`],
    [`${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(57)}.com`, `${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(57)}.com`],
  ])("accepts %s as %s", (input, normalized) => {
    expect(parseAddress(input)).toMatchObject({ ok: true, normalized });
  });

  test("tells an address literal from a domain", () => {
    expect(parseAddress("a@[192.0.2.1]")).toMatchObject({ isAddressLiteral: true, domain: "[192.0.2.1]" });
    expect(parseAddress("a@example.com")).toMatchObject({ isAddressLiteral: false, domain: "example.com", localPart: "a" });
  });
});

describe("addresses an SMTP server refuses", () => {
  test.each([
    ["Abc.example.com", "no @"],
    ["A@b@c@example.com", '"@", which must be quoted'],
    // Wikipedia's invalid examples: specials outside quotes, quotes not around the whole local part.
    ['a"b(c)d,e:f;g<h>i[j\\k]l@example.com', "must be quoted"],
    ['just"not"right@example.com', "must be quoted"],
    ['this is"not\\allowed@example.com', "must be quoted"],
    ["john..doe@example.com", "double dot"],
    [".john@example.com", "leading, trailing or double dot"],
    ["john.@example.com", "leading, trailing or double dot"],
    ['"unclosed@example.com', "not closed"],
    ['""@example.com', "local part is empty"],
    ['"\u0001"@example.com', "control characters"],
    ["@example.com", "local part is empty"],
    [`${"a".repeat(65)}@example.com`, "longer than 64 octets"],
    // 64 two-octet characters are 128 octets: the limit counts octets, not characters (RFC 6531 §3.3).
    [`${"é".repeat(33)}@example.com`, "longer than 64 octets"],
    [`${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(58)}.com`, "longer than 254 octets"],
    // Display names and comments are RFC 5322 header syntax, not an address.
    ["John Doe <john@example.com>", "must be quoted"],
    ["john@example.com (comment)", "not a valid internationalised domain name"],
    ["user@localhost", "at least two labels"],
    ["user@example.com.", "ends with a dot"],
    ["user@-example.com", "inner hyphens"],
    ["user@exa_mple.com", "inner hyphens"],
    ["user@example.123", "not a valid internationalised domain name"],
    ["user@192.0.2.1", "IP address"],
    ["user@[300.1.1.1]", "not an IPv4 or IPv6"],
    ["user@[IPv6:zz::1]", "not an IPv4 or IPv6"],
    ["user@", "domain is empty"],
  ])("refuses %j: %s", (input, problem) => {
    const parsed = parseAddress(input);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.problem).toContain(problem);
  });
});
