// The RFC 7208 SPF test suite (the YAML kept by pyspf, release 2014.04 and its fixes): scenarios of tests and the
// zone data each runs against, served by the test DNS server the way pyspf's own driver (test/testspf.py) serves it:
//   - a name's entries in order; a bare TIMEOUT entry makes every query for a type not answered before it time out,
//     and `TYPE: TIMEOUT` times out that type;
//   - `TXT: NONE` publishes nothing but stops the driver from copying the name's SPF records into TXT records, which
//     it does for every name without a TXT entry (the suite was written for both RR types; RFC 7208 reads TXT only);
//   - a name not in the zone does not exist.
import { parseAllDocuments } from "yaml";
import type { RecordInput, TestDnsServer } from "./dns-server.js";

export interface SpfTest {
  readonly description?: string;
  readonly spec?: string | string[];
  readonly helo: string;
  readonly host: string;
  readonly mailfrom: string;
  /** The result, or the results any of which is right. */
  readonly result: string | string[];
}

export interface SpfScenario {
  readonly description: string;
  readonly tests: Readonly<Record<string, SpfTest>>;
  readonly zonedata: Readonly<Record<string, ZoneEntry[]>>;
}

type ZoneEntry = string | Readonly<Record<string, unknown>>;
/** A zone entry: a bare word (TIMEOUT), or one record's type and value. */
type Listed = string | { readonly type: string; readonly value: unknown };

export function parseSpfSuite(text: string): SpfScenario[] {
  return parseAllDocuments(text)
    .map((document) => document.toJS() as SpfScenario | null)
    .filter((scenario): scenario is SpfScenario => scenario !== null && typeof scenario === "object" && "tests" in scenario);
}

const TYPES = ["A", "AAAA", "MX", "TXT", "SPF", "PTR", "CNAME"] as const;
type ZoneType = (typeof TYPES)[number];

/** Replaces whatever the server holds with the scenario's zone. */
export function serveZone(dns: TestDnsServer, zonedata: SpfScenario["zonedata"]): void {
  dns.clear();
  for (const [name, entries] of Object.entries(zonedata)) {
    const listed: Listed[] = entries.flatMap((entry): Listed[] =>
      typeof entry === "string" ? [entry] : Object.entries(entry).map(([type, value]) => ({ type, value })),
    );
    const copyToTxt = !listed.some((e) => typeof e !== "string" && e.type === "TXT");
    const copies = copyToTxt ? listed.flatMap((e) => (typeof e !== "string" && e.type === "SPF" ? [{ type: "TXT", value: e.value }] : [])) : [];
    const all = [...listed, ...copies];
    const records: RecordInput[] = [];
    for (const type of TYPES) {
      let answered = false;
      for (const entry of all) {
        if (entry === "TIMEOUT") {
          if (!answered) dns.fail(name, "timeout", type);
          break;
        }
        if (typeof entry === "string" || entry.type !== type) continue;
        const { value } = entry;
        if (value === "TIMEOUT") {
          dns.fail(name, "timeout", type);
          break;
        }
        if (value === "NONE") continue;
        records.push(record(type, value));
        answered = true;
      }
    }
    dns.set(name, records);
  }
}

function record(type: ZoneType, value: unknown): RecordInput {
  const host = (v: unknown) => String(v).replace(/\.$/, "");
  switch (type) {
    case "A":
    case "AAAA":
      return { type, address: String(value) };
    case "MX": {
      const [preference, exchange] = value as [number, string];
      return { type, preference, exchange: host(exchange) };
    }
    case "TXT":
    case "SPF":
      return { type, text: Array.isArray(value) ? value.map(String) : String(value) };
    case "PTR":
    case "CNAME":
      return { type, target: host(value) };
  }
}
