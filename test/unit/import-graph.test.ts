// The layering of src/ and workflows/, checked on the real import graph: every import and export statement,
// dynamic import() and import type of every .ts file under them, parsed with TypeScript's own parser, relative
// specifiers resolved to files.
//
// - workflows/ is bundled into Temporal's deterministic sandbox: it imports @temporalio/workflow and its siblings,
//   and anything else (activities included) by type only.
// - Temporal stays at the edge: only src/temporal/ and the composition (src/main.ts, src/roles/, and src/runtime/
//   and src/cli/ where they must) import @temporalio/* packages, workflows/ or src/temporal/; domain code declares
//   ports that src/temporal/ implements and the composition passes in.
// - Workflow contracts (argument and result types) are types only, in workflows/types.ts; src/ names workflows by
//   type only. Activities never import workflows/ (Temporal's samples: workflows import activities by type, never
//   the reverse).
// - The composition is the top: src/main.ts and src/roles/ are imported by nothing but the composition and the CLI.
// - No import circles, type-only imports included.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript-ast";
import { beforeAll, describe, expect, test } from "vitest";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const SCANNED = ["src", "workflows"];
const CONTRACTS = "workflows/types.ts";

interface Import {
  readonly from: string;
  /** The specifier as written. */
  readonly specifier: string;
  /** The file it resolves to (relative to the root, / separated) for a relative specifier; else the specifier. */
  readonly to: string;
  /** `import type`, `export type … from`, or a type position (`typeof import("…")`): erased at run time. */
  readonly typeOnly: boolean;
}

let imports: Import[];
let files: string[];

beforeAll(() => {
  files = SCANNED.flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"))
      .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)).split(sep).join("/")),
  );
  imports = files.flatMap(importsOf);
});

function importsOf(file: string): Import[] {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (specifier: ts.Expression | undefined, typeOnly: boolean) => {
    if (specifier && ts.isStringLiteralLike(specifier)) found.push({ from: file, specifier: specifier.text, to: resolveSpecifier(file, specifier.text), typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, node.importClause?.isTypeOnly ?? false);
    else if (ts.isExportDeclaration(node)) add(node.moduleSpecifier, node.isTypeOnly);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, true);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0], false);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `./x.js` is the module `./x.ts` from the sources (NodeNext); a plain JavaScript sibling stays `.js`. */
function resolveSpecifier(from: string, specifier: string): string {
  if (!specifier.startsWith(".")) return specifier;
  const target = relative(ROOT, resolve(ROOT, dirname(from), specifier)).split(sep).join("/");
  const asTypeScript = target.replace(/\.js$/, ".ts");
  return existsSync(join(ROOT, asTypeScript)) ? asTypeScript : target;
}

const show = (i: Import) => `${i.from} → ${i.specifier}${i.typeOnly ? " (type)" : ""}`;
const under = (file: string, ...dirs: string[]) => dirs.some((dir) => file.startsWith(`${dir}/`));
/** The composition and the edges that must touch Temporal: the Temporal adapter itself, roles, runtime, CLI. */
const temporalEdge = (file: string) => file === "src/main.ts" || under(file, "src/temporal", "src/roles", "src/runtime", "src/cli");
const isTemporal = (i: Import) => i.specifier.startsWith("@temporalio/") || under(i.to, "workflows", "src/temporal");

describe("the import graph of src/ and workflows/", () => {
  test("is the real one: every file is read and every relative import resolves to a file", () => {
    expect(files.length).toBeGreaterThan(100);
    // Known edges of every kind the parser must see: value, type, re-export and dynamic imports.
    const seen = (from: string, to: string, typeOnly: boolean) => imports.some((i) => i.from === from && i.to === to && i.typeOnly === typeOnly);
    expect(seen("workflows/index.ts", "workflows/delivery.ts", false)).toBe(true);
    expect(seen("src/temporal/worker.ts", "@temporalio/worker", false)).toBe(true);
    expect(seen("workflows/delivery.ts", "src/temporal/activities/delivery.ts", true)).toBe(true);
    expect(seen("src/cli/main.ts", "src/config.ts", false)).toBe(true);
    const unresolved = imports.filter((i) => i.specifier.startsWith(".") && !existsSync(join(ROOT, i.to))).map(show);
    expect(unresolved).toEqual([]);
  });

  test("workflow files import only @temporalio/workflow, workflows/ siblings, and types", () => {
    const offenders = imports
      .filter((i) => under(i.from, "workflows") && !i.typeOnly && i.specifier !== "@temporalio/workflow" && !under(i.to, "workflows"))
      .map(show);
    expect(offenders).toEqual([]);
  });

  test("only src/temporal/ and the composition import Temporal packages, workflows/ or src/temporal/: domain code sees ports", () => {
    const offenders = imports.filter((i) => under(i.from, "src") && !temporalEdge(i.from) && isTemporal(i)).map(show);
    expect(offenders).toEqual([]);
  });

  test("src/ imports workflows/ by type only: the worker loads them by path into the sandbox", () => {
    const offenders = imports.filter((i) => under(i.from, "src") && under(i.to, "workflows") && !i.typeOnly).map(show);
    expect(offenders).toEqual([]);
  });

  test("the workflow contracts (workflows/types.ts) are types only", () => {
    const source = ts.createSourceFile(CONTRACTS, readFileSync(join(ROOT, CONTRACTS), "utf8"), ts.ScriptTarget.Latest, true);
    const typesOnly = (node: ts.Statement) =>
      ts.isInterfaceDeclaration(node) ||
      ts.isTypeAliasDeclaration(node) ||
      (ts.isImportDeclaration(node) && node.importClause?.isTypeOnly === true) ||
      (ts.isExportDeclaration(node) && node.isTypeOnly);
    const offenders = source.statements.filter((node) => !typesOnly(node)).map((node) => node.getText(source).split("\n")[0]);
    expect(source.statements.length).toBeGreaterThan(0);
    expect(offenders).toEqual([]);
  });

  test("activities never import workflows/", () => {
    const offenders = imports.filter((i) => under(i.from, "src/temporal/activities") && under(i.to, "workflows")).map(show);
    expect(offenders).toEqual([]);
  });

  test("the composition (src/main.ts, src/roles/) is imported only by the composition and the CLI", () => {
    const composition = (file: string) => file === "src/main.ts" || under(file, "src/roles");
    const offenders = imports.filter((i) => composition(i.to) && !composition(i.from) && !under(i.from, "src/cli")).map(show);
    expect(offenders).toEqual([]);
  });

  test("has no import circles, type-only imports included", () => {
    expect(circles(files, imports)).toEqual([]);
  });
});

/** One circle through each strongly connected group of files (Tarjan's algorithm), as `a → b → a`. */
function circles(nodes: readonly string[], edges: readonly Import[]): string[] {
  const next = new Map<string, string[]>(nodes.map((n) => [n, []]));
  for (const e of edges) if (next.has(e.to) && !next.get(e.from)!.includes(e.to)) next.get(e.from)!.push(e.to);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      group.push(w);
      if (w === v) break;
    }
    if (group.length > 1 || next.get(v)!.includes(v)) groups.push(group);
  };
  for (const n of nodes) if (!index.has(n)) connect(n);
  return groups.map((group) => shortestCircle(group.sort()[0]!, new Set(group), next).join(" → "));
}

/** The shortest path from `start` back to itself inside its group (breadth first). */
function shortestCircle(start: string, group: ReadonlySet<string>, next: ReadonlyMap<string, readonly string[]>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const v = queue[head]!;
    for (const w of next.get(v)!) {
      if (!group.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}
