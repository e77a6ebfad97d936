// The pure checks of email validation: where mail goes by DNS, the verdict table, typos, roles, disposable domains.
import { describe, expect, test } from "vitest";
import type { DnsLookup } from "../../src/dns/resolver.js";
import { classify, mailHostOf, type Findings, type MailHost } from "../../src/validation/classify.js";
import { loadDisposableDomains } from "../../src/validation/disposable.js";
import { isRoleAccount } from "../../src/validation/roles.js";
import { parseAddress } from "../../src/validation/syntax.js";
import { editDistance, suggestDomain } from "../../src/validation/typos.js";

const mx = (...records: [number, string][]): DnsLookup<"MX"> => ({
  kind: "answer",
  ttl: 300,
  records: records.map(([preference, exchange]) => ({ preference, exchange })),
});
const a: DnsLookup<"A"> = { kind: "answer", ttl: 300, records: ["192.0.2.1"] };
const nodata = { kind: "nodata", ttl: 60 } as const;
const nxdomain = { kind: "nxdomain", ttl: 60 } as const;
const servfail = { kind: "temporary", reason: "SERVFAIL" } as const;

describe("where mail for a domain goes", () => {
  test.each<[string, MailHost, DnsLookup<"MX">, DnsLookup<"A">?, DnsLookup<"AAAA">?]>([
    ["MX hosts by preference", { kind: "mx", hosts: ["mx1.example", "mx2.example"] }, mx([20, "mx2.example"], [10, "mx1.example"])],
    // RFC 7505 §3: a single MX of preference 0 and exchange "." says the domain accepts no mail.
    ["a null MX", { kind: "null_mx" }, mx([0, ""])],
    // RFC 5321 §5.1: without MX records the domain's own address records are the mail host.
    ["no MX but an A record (implicit MX)", { kind: "implicit" }, nodata, a, nodata],
    ["no MX and an AAAA record only", { kind: "implicit" }, nodata, nodata, { kind: "answer", ttl: 1, records: ["2001:db8::1"] }],
    ["no MX, A or AAAA", { kind: "none" }, nodata, nodata, nodata],
    ["NXDOMAIN", { kind: "nxdomain" }, nxdomain],
    ["a failed MX lookup", { kind: "temporary", reason: "SERVFAIL" }, servfail],
    ["no MX and a failed A lookup", { kind: "temporary", reason: "SERVFAIL" }, nodata, servfail, nodata],
  ])("reads %s", (_what, expected, mxLookup, aLookup, aaaaLookup) => {
    expect(mailHostOf(mxLookup, aLookup, aaaaLookup)).toEqual(expected);
  });
});

describe("the verdict", () => {
  const findings = (email: string, overrides: Partial<Findings> = {}): Findings => ({
    email,
    parsed: parseAddress(email),
    mailHost: { kind: "mx", hosts: ["mx.example.com"] },
    disposableDomain: undefined,
    role: false,
    suppressed: false,
    suggestion: undefined,
    ...overrides,
  });

  test.each<[string, Partial<Findings>, string, string]>([
    ["ada@example.com", {}, "deliverable", "accepts_mail"],
    ["ada@example.com", { mailHost: { kind: "implicit" } }, "deliverable", "accepts_mail"],
    ["ada@example.com", { mailHost: { kind: "nxdomain" } }, "undeliverable", "domain_not_found"],
    ["ada@example.com", { mailHost: { kind: "null_mx" } }, "undeliverable", "null_mx"],
    ["ada@example.com", { mailHost: { kind: "none" } }, "undeliverable", "no_mail_server"],
    ["ada@example.com", { mailHost: { kind: "temporary", reason: "timeout" } }, "unknown", "dns_unavailable"],
    ["ada@example.com", { suppressed: true }, "undeliverable", "suppressed"],
    // The organization's own suppression outranks what DNS says; a definitive DNS answer outranks the risks.
    ["ada@example.com", { suppressed: true, mailHost: { kind: "temporary", reason: "x" } }, "undeliverable", "suppressed"],
    ["info@example.com", { role: true, mailHost: { kind: "nxdomain" } }, "undeliverable", "domain_not_found"],
    ["ada@mailinator.com", { disposableDomain: "mailinator.com", role: true }, "risky", "disposable_domain"],
    ["info@example.com", { role: true }, "risky", "role_account"],
    ["ada@gmial.com", { suggestion: "gmail.com" }, "risky", "possible_typo"],
    ["ada@[192.0.2.1]", { mailHost: undefined }, "risky", "address_literal"],
    ["not an address", {}, "undeliverable", "invalid_syntax"],
  ])("of %s with %j is %s (%s)", (email, overrides, result, reason) => {
    expect(classify(findings(email, overrides))).toMatchObject({ result, reason });
  });

  test("explains every check of a deliverable address and gives the normalised form", () => {
    expect(classify(findings("Ada@Example.com"))).toEqual({
      email: "Ada@Example.com",
      normalized: "ada@example.com",
      result: "deliverable",
      reason: "accepts_mail",
      checks: {
        syntax: { passed: true, detail: "the address is well formed" },
        domain: { passed: true, detail: "example.com exists" },
        mx: { passed: true, detail: "mail goes to mx.example.com" },
        disposable: { passed: true, detail: "not a known disposable-mail domain" },
        role: { passed: true, detail: "not a role account" },
        suppressed: { passed: true, detail: "the address is not on this organization's suppression list" },
      },
      suggestion: null,
    });
  });

  test("marks the checks it could not make when the syntax is invalid", () => {
    const result = classify(findings("no-at-sign"));
    expect(result.normalized).toBeNull();
    expect(result.checks.syntax).toEqual({ passed: false, detail: "the address has no @" });
    expect(result.checks.mx).toEqual({ passed: false, detail: "not checked: the address is not valid" });
  });
});

describe("typo suggestions", () => {
  test.each([
    ["gmial.com", "gmail.com"], // an adjacent transposition is one edit
    ["gmaill.com", "gmail.com"],
    ["hotmial.con", "hotmail.com"],
    ["outlok.com", "outlook.com"],
    ["yahoo.co", "yahoo.com"],
    ["aol.con", "aol.com"], // short providers get the TLD rule only
    ["comcast.ent", "comcast.net"],
  ])("suggests %s → %s", (domain, suggestion) => {
    expect(suggestDomain(domain)).toBe(suggestion);
  });

  test.each(["gmail.com", "ge.com", "example.com", "mycompany.io", "me.co.uk"])("suggests nothing for %s", (domain) => {
    expect(suggestDomain(domain)).toBeUndefined();
  });

  test("counts an adjacent transposition as one edit and stops past the limit", () => {
    expect(editDistance("gmial", "gmail", 2)).toBe(1);
    expect(editDistance("kitten", "sitting", 3)).toBe(3);
    expect(editDistance("abcdef", "uvwxyz", 2)).toBe(3);
  });
});

describe("role accounts and disposable domains", () => {
  test.each([
    ["postmaster", true], // RFC 2142 §5
    ["abuse", true], // RFC 2142 §4
    ["sales+emea", true],
    ["ada", false],
    ["salesforce", false],
  ])("%s is a role account: %s", (local, expected) => {
    expect(isRoleAccount(local)).toBe(expected);
  });

  test.each([
    ["mailinator.com", "mailinator.com"],
    ["eu.mailinator.com", "mailinator.com"],
    ["guerrillamail.com", "guerrillamail.com"],
    ["gmail.com", undefined],
    ["com", undefined],
  ])("%s is disposable as %s", (domain, listed) => {
    expect(loadDisposableDomains()(domain)).toBe(listed);
  });
});
