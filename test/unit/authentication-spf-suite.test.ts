// The RFC 7208 SPF test suite (pyspf's YAML, downloaded from PyPI at test time) run through the service's
// evaluation path: each scenario's zone on a real DNS server on loopback, each test a message evaluated by the
// sender authenticator (the stub resolver, its cache, mailauth's SPF), the SPF word compared with the suite's.
import { afterAll, beforeAll, expect, test } from "vitest";
import { client, testAuthenticator } from "../support/authentication-fixtures.js";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.js";
import { spfSuiteText } from "../support/mail-authentication-interop.js";
import { parseSpfSuite, serveZone } from "../support/spf-suite.js";

/**
 * The cases the evaluation answers differently, and why. Every other case must pass; a case leaving this list
 * (a mailauth upgrade that fixes it) fails the test until it is taken out. None, with mailauth's SPF in its strict
 * mode. Its lenient default (measured: 196 of 203) evaluates a record only up to the term that matches, so a syntax
 * error after it is no permerror: bare-ip6, exp-only-macro-char, exp-syntax-error, exp-twice (fail or neutral), and
 * it refuses a HELO that is not a domain name where the suite expands it: hello-domain-literal, invalid-hello-macro,
 * require-valid-helo (permerror instead of fail). The obsolete SPF RR type (99) is never asked, so the suite's
 * cases about it (spfonly: none; spftimeout: fail) pass either way.
 */
const KNOWN_DIFFERENCES: Readonly<Record<string, string>> = {};

/** Measured: all 203 cases of pyspf 2.0.14's copy of the suite (mailauth's SPF in its strict mode). */
const PASS_FLOOR = 203;

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns?.stop());

test("the RFC 7208 test suite: every case but the known differences gives the suite's result", { timeout: 300_000 }, async () => {
  const scenarios = parseSpfSuite(await spfSuiteText());
  const outcomes: { name: string; expected: string[]; got: string; scenario: string }[] = [];
  for (const scenario of scenarios) {
    serveZone(dns, scenario.zonedata);
    // A fresh cache per scenario: the scenarios reuse names (example.com) with other records.
    // A loopback answer on a busy machine can take longer than 150 ms (a temperror at load 13): only the scenarios
    // whose zone has names that time out wait that little for an answer.
    const timesOut = JSON.stringify(scenario.zonedata).includes("TIMEOUT");
    const authenticator = testAuthenticator(dns, { dnsTimeoutMs: timesOut ? 150 : 2000 });
    const message = Buffer.from("From: <probe@spf-suite.invalid>\r\nSubject: SPF\r\n\r\nbody\r\n");
    await Promise.all(
      Object.entries(scenario.tests).map(async ([name, t]) => {
        const result = await authenticator.evaluate(message, client(t.mailfrom ?? "", t.helo ?? "", t.host));
        outcomes.push({ name, expected: ([] as string[]).concat(t.result), got: result.spf, scenario: scenario.description });
      }),
    );
  }
  const failing = outcomes.filter((o) => !o.expected.includes(o.got)).sort((a, b) => a.name.localeCompare(b.name));
  const passed = outcomes.length - failing.length;
  console.log(
    `RFC 7208 suite: ${passed} of ${outcomes.length} cases pass (${((100 * passed) / outcomes.length).toFixed(1)}%)\n` +
      failing.map((f) => `  ${f.name} (${f.scenario}): expected ${f.expected.join(" or ")}, got ${f.got} — ${KNOWN_DIFFERENCES[f.name] ?? "NOT KNOWN"}`).join("\n"),
  );
  expect(passed).toBeGreaterThanOrEqual(PASS_FLOOR);
  expect(failing.map((f) => f.name)).toEqual(Object.keys(KNOWN_DIFFERENCES).sort());
});
