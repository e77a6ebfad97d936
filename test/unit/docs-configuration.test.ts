// docs/configuration.md documents exactly the variables loadConfig reads. The variables are found by calling
// loadConfig with environments that record every name asked of them (whatever shape loadConfig takes inside: one
// function or a parser per section), and the page's are the first cells of its tables, one variable per row.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { loadConfig } from "../../src/config.js";
import { tableRows } from "../support/markdown.js";

const PAGE = new URL("../../docs/configuration.md", import.meta.url).pathname;
const VARIABLE = /^`([A-Z][A-Z0-9_]*)`$/;

/** The names loadConfig asks `env` for; a loadConfig that refuses the values still reads them first. */
function namesRead(env: Readonly<Record<string, string>>): Set<string> {
  const names = new Set<string>();
  const note = (name: string | symbol) => {
    if (typeof name === "string") names.add(name);
  };
  const recording = new Proxy(env, {
    get: (target, name) => (note(name), Reflect.get(target, name)),
    has: (target, name) => (note(name), Reflect.has(target, name)),
    getOwnPropertyDescriptor: (target, name) => (note(name), Reflect.getOwnPropertyDescriptor(target, name)),
  });
  try {
    loadConfig(recording);
  } catch {
    // A refused value (ConfigError) ends the call; what was read until then is recorded.
  }
  return names;
}

/** Every variable loadConfig reads: with nothing set, with external PostgreSQL and Temporal, and with all of them set. */
function variablesOfLoadConfig(): Set<string> {
  const embedded = namesRead({});
  const external = namesRead({ DATABASE_URL: "postgres://mailbox@db.internal/mailbox", TEMPORAL_ADDRESS: "temporal.internal:7233" });
  // Reads that depend on another variable being set show once every variable found so far is set.
  const all = namesRead(Object.fromEntries([...embedded, ...external].map((name) => [name, "1"])));
  return new Set([...embedded, ...external, ...all].filter((name) => /^[A-Z][A-Z0-9_]*$/.test(name)));
}

/** The page's variables: the first cell of every table row, which must be one variable in backticks. */
function variablesOfThePage(): { names: string[]; malformed: string[] } {
  const rows = tableRows(readFileSync(PAGE, "utf8"));
  const names = rows.flatMap((r) => VARIABLE.exec(r.cells[0] ?? "")?.[1] ?? []);
  const malformed = rows.filter((r) => !VARIABLE.test(r.cells[0] ?? "")).map((r) => `line ${r.line}: ${r.cells[0]}`);
  return { names, malformed };
}

describe("docs/configuration.md", () => {
  test("every table row of the page names one variable in backticks in its first cell, once", () => {
    const { names, malformed } = variablesOfThePage();
    expect(malformed).toEqual([]);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });

  test("documents every variable loadConfig reads, and none that it does not read", () => {
    const read = variablesOfLoadConfig();
    const documented = new Set(variablesOfThePage().names);
    // loadConfig reads dozens of variables: an environment that recorded none would make the comparison empty.
    expect(read.size).toBeGreaterThan(50);
    expect([...read].filter((name) => !documented.has(name)).sort(), "read by loadConfig, not in docs/configuration.md").toEqual([]);
    expect([...documented].filter((name) => !read.has(name)).sort(), "in docs/configuration.md, not read by loadConfig").toEqual([]);
  });

  test("the recording environment records what loadConfig asks for, and nothing else", () => {
    const read = namesRead({});
    expect(read.has("HTTP_PORT")).toBe(true);
    expect(read.has("DELIVERY_BACKLOG_MAX_S")).toBe(true);
    expect(read.has("TEMPORAL_CLI_PATH")).toBe(false); // read by src/runtime/temporal-cli.ts, not by loadConfig
  });
});
