// The pure parts of customer-domain verification: checks of DNS answers against the published records, what
// they mean per capability, and the moves of a capability's state through grace and failure.
import { describe, expect, test } from "vitest";
import type { CapabilityRecord } from "../../src/db/entities/customer-domain.js";
import type { DnsLookup } from "../../src/dns/resolver.js";
import { initialCapability, isEnabled, nextCapability, nextCheckDue } from "../../src/domains/capability-state.js";
import { dkimKeyOf, evaluateChecks, outcomeFor, type DomainCheck, type DomainLookups } from "../../src/domains/checks.js";
import { registrableName } from "../../src/domains/domains.js";

const keys = { domain: "acme.example", ownershipToken: "0123456789abcdef0123456789abcdef", dkimSelector: "mbx1a2b3c4d", dkimPublicKey: "MIIBIjANBgkq" };
const settings = { inboundMxHost: "mx.agents.test", spfInclude: "_spf.agents.test" };
const txt = (...records: string[]): DnsLookup<"TXT"> => ({ kind: "answer", ttl: 300, records });
const published: DomainLookups = {
  ownership: txt("mailbox-verification=0123456789abcdef0123456789abcdef"),
  mx: { kind: "answer", ttl: 300, records: [{ preference: 10, exchange: "mx.agents.test" }] },
  dkim: txt("v=DKIM1; k=rsa; p=MIIBIjANBgkq"),
  spf: txt("v=spf1 include:_spf.agents.test ~all"),
};
const statuses = (checks: DomainCheck[]) => Object.fromEntries(checks.map((c) => [c.name, c.status]));

describe("the checks of a domain's records", () => {
  test("pass when every record is published as given", () => {
    expect(statuses(evaluateChecks(keys, settings, published))).toEqual({ ownership: "passed", mx: "passed", dkim: "passed", spf: "passed" });
  });

  test.each<[string, Partial<DomainLookups>, Record<string, string>]>([
    ["another token", { ownership: txt("mailbox-verification=ffff") }, { ownership: "failed" }],
    // Other TXT records beside ours at the name (Google's site verification, say) do not matter.
    ["our token among others", { ownership: txt("google-site-verification=x", "mailbox-verification=0123456789abcdef0123456789abcdef") }, { ownership: "passed" }],
    ["an MX elsewhere", { mx: { kind: "answer", ttl: 1, records: [{ preference: 10, exchange: "aspmx.l.google.com" }] } }, { mx: "failed" }],
    ["our MX host behind another one", { mx: { kind: "answer", ttl: 1, records: [{ preference: 5, exchange: "backup.example" }, { preference: 10, exchange: "mx.agents.test" }] } }, { mx: "passed" }],
    ["a null MX", { mx: { kind: "answer", ttl: 1, records: [{ preference: 0, exchange: "" }] } }, { mx: "failed" }],
    ["the DKIM key split with spaces (RFC 6376 §3.6.2.2 allows folding whitespace)", { dkim: txt("v=DKIM1; k=rsa; p=MIIB IjAN Bgkq") }, { dkim: "passed" }],
    ["the DKIM record without v= and k= (both optional)", { dkim: txt("p=MIIBIjANBgkq") }, { dkim: "passed" }],
    ["an Ed25519 key at the selector", { dkim: txt("v=DKIM1; k=ed25519; p=MIIBIjANBgkq") }, { dkim: "failed" }],
    ["another key", { dkim: txt("v=DKIM1; k=rsa; p=AAAA") }, { dkim: "failed" }],
    // RFC 7208 §4.5: two SPF records are a permanent error at every receiver.
    ["two SPF records", { spf: txt("v=spf1 include:_spf.agents.test ~all", "v=spf1 -all") }, { spf: "failed" }],
    ["an SPF record with our include among others", { spf: txt("v=spf1 include:_spf.google.com include:_spf.agents.test -all", "other") }, { spf: "passed" }],
    ["NXDOMAIN", { ownership: { kind: "nxdomain", ttl: 60 } }, { ownership: "failed" }],
    ["NODATA", { dkim: { kind: "nodata", ttl: 60 } }, { dkim: "failed" }],
    ["SERVFAIL", { mx: { kind: "temporary", reason: "SERVFAIL" } }, { mx: "temporary_error" }],
  ])("judge %s", (_what, lookups, expected) => {
    expect(statuses(evaluateChecks(keys, settings, { ...published, ...lookups }))).toMatchObject(expected);
  });

  test("show what was found as the record values, and MX records as preference and host", () => {
    const checks = evaluateChecks(keys, settings, { ...published, mx: { kind: "answer", ttl: 1, records: [{ preference: 0, exchange: "" }] } });
    expect(checks[1]).toMatchObject({ name: "mx", recordName: "acme.example", expected: "10 mx.agents.test", found: ["0 ."] });
    expect(checks[0]).toMatchObject({ recordName: "_mailbox-verification.acme.example", found: ["mailbox-verification=0123456789abcdef0123456789abcdef"] });
  });

  test("read the p= tag of a DKIM record", () => {
    expect(dkimKeyOf("v=DKIM1; h=sha256; k=rsa; p=AB CD;")).toBe("ABCD");
    expect(dkimKeyOf("v=DKIM2; p=AB")).toBeUndefined();
  });
});

describe("what the checks mean for a capability", () => {
  const check = (name: DomainCheck["name"], status: DomainCheck["status"], gates: DomainCheck["gates"]): DomainCheck => ({
    name, recordName: "", expected: "", found: [], status, detail: "", gates,
  });
  test.each<[string, DomainCheck[], "passed" | "failed" | "temporary", "passed" | "failed" | "temporary"]>([
    ["all passed", [check("ownership", "passed", ["inbound", "outbound"]), check("mx", "passed", ["inbound"]), check("dkim", "passed", ["outbound"])], "passed", "passed"],
    ["the advisory SPF failed", [check("ownership", "passed", ["inbound", "outbound"]), check("mx", "passed", ["inbound"]), check("dkim", "passed", ["outbound"]), check("spf", "failed", [])], "passed", "passed"],
    ["MX missing", [check("ownership", "passed", ["inbound", "outbound"]), check("mx", "failed", ["inbound"]), check("dkim", "passed", ["outbound"])], "failed", "passed"],
    ["DKIM unanswered", [check("ownership", "passed", ["inbound", "outbound"]), check("mx", "passed", ["inbound"]), check("dkim", "temporary_error", ["outbound"])], "passed", "temporary"],
    // A missing record stays missing however often DNS is asked: definitive beats temporary.
    ["ownership missing and MX unanswered", [check("ownership", "failed", ["inbound", "outbound"]), check("mx", "temporary_error", ["inbound"]), check("dkim", "passed", ["outbound"])], "failed", "failed"],
  ])("%s: inbound %s, outbound %s", (_what, checks, inbound, outbound) => {
    expect([outcomeFor(checks, "inbound"), outcomeFor(checks, "outbound")]).toEqual([inbound, outbound]);
  });
});

describe("a capability's state", () => {
  const t0 = new Date("2026-01-01T00:00:00.000Z");
  const at = (ms: number) => new Date(t0.getTime() + ms);
  const GRACE = 10_000;
  const verified: CapabilityRecord = { state: "verified", lastCheckedAt: t0.toISOString(), lastSuccessAt: t0.toISOString(), graceUntil: null };

  test.each<[string, CapabilityRecord, "passed" | "failed" | "temporary", number, CapabilityRecord]>([
    ["a first pass verifies", initialCapability(), "passed", 5, { state: "verified", lastCheckedAt: at(5).toISOString(), lastSuccessAt: at(5).toISOString(), graceUntil: null }],
    ["a failure of a never-verified domain leaves it unverified", initialCapability(), "failed", 5, { state: "unverified", lastCheckedAt: at(5).toISOString(), lastSuccessAt: null, graceUntil: null }],
    ["a temporary failure grants nothing", initialCapability(), "temporary", 5, { state: "unverified", lastCheckedAt: at(5).toISOString(), lastSuccessAt: null, graceUntil: null }],
    ["a definitive failure ends a verified capability at once", verified, "failed", 5, { state: "failed", lastCheckedAt: at(5).toISOString(), lastSuccessAt: t0.toISOString(), graceUntil: null }],
    ["a temporary failure starts the grace period", verified, "temporary", 5, { state: "grace", lastCheckedAt: at(5).toISOString(), lastSuccessAt: t0.toISOString(), graceUntil: at(5 + GRACE).toISOString() }],
    [
      "another temporary failure keeps the grace deadline",
      { ...verified, state: "grace", graceUntil: at(GRACE).toISOString() }, "temporary", 6000,
      { state: "grace", lastCheckedAt: at(6000).toISOString(), lastSuccessAt: t0.toISOString(), graceUntil: at(GRACE).toISOString() },
    ],
    [
      "a temporary failure after the deadline fails it",
      { ...verified, state: "grace", graceUntil: at(GRACE).toISOString() }, "temporary", GRACE,
      { state: "failed", lastCheckedAt: at(GRACE).toISOString(), lastSuccessAt: t0.toISOString(), graceUntil: null },
    ],
    [
      "a pass during grace verifies again",
      { ...verified, state: "grace", graceUntil: at(GRACE).toISOString() }, "passed", 7000,
      { state: "verified", lastCheckedAt: at(7000).toISOString(), lastSuccessAt: at(7000).toISOString(), graceUntil: null },
    ],
    [
      "a pass after failure restores it",
      { ...verified, state: "failed" }, "passed", 9000,
      { state: "verified", lastCheckedAt: at(9000).toISOString(), lastSuccessAt: at(9000).toISOString(), graceUntil: null },
    ],
  ])("%s", (_what, previous, outcome, ms, expected) => {
    expect(nextCapability(previous, outcome, at(ms), GRACE)).toEqual(expected);
  });

  test("is usable while verified, and in grace until the deadline by the clock alone", () => {
    const grace: CapabilityRecord = { ...verified, state: "grace", graceUntil: at(GRACE).toISOString() };
    expect(isEnabled(verified, at(1e9))).toBe(true);
    expect(isEnabled(grace, at(GRACE - 1))).toBe(true);
    expect(isEnabled(grace, at(GRACE))).toBe(false);
    expect(isEnabled({ ...verified, state: "failed" }, t0)).toBe(false);
    expect(isEnabled(initialCapability(), t0)).toBe(false);
  });

  test("is due a refresh age after the last check, or at the end of a grace period if that comes first", () => {
    const domain = { lastCheckedAt: t0, createdAt: at(-5000), inbound: verified, outbound: verified };
    expect(nextCheckDue(domain, 60_000)).toEqual(at(60_000));
    expect(nextCheckDue({ ...domain, lastCheckedAt: null }, 60_000)).toEqual(at(55_000));
    expect(nextCheckDue({ ...domain, outbound: { ...verified, state: "grace", graceUntil: at(GRACE).toISOString() } }, 60_000)).toEqual(at(GRACE));
  });
});

describe("registrable domain names", () => {
  test.each([
    ["Bücher.Example", "xn--bcher-kva.example"],
    ["acme.example.", "acme.example"],
    ["  mail.acme.co.uk ", "mail.acme.co.uk"],
  ])("registers %j as %s", (input, ascii) => {
    expect(registrableName(input, "agents.test")).toBe(ascii);
  });
});
