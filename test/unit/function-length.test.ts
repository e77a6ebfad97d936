// No function in src/ or workflows/ runs past MAX_LINES lines (issue 20): a longer one holds several units, and a
// factory that returns closures hides its call graph from every reader and tool. Functions are read with the
// TypeScript compiler's parser, so declarations, expressions, arrows, methods, accessors and constructors all
// count, each with what it nests.
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import ts from "typescript-ast";
import { describe, expect, test } from "vitest";

const MAX_LINES = 120;
const ROOT = new URL("../../", import.meta.url).pathname;
const SCANNED = ["src", "workflows"];

interface LongFunction {
  readonly name: string;
  readonly line: number;
  readonly lines: number;
}

/** The functions of a source text longer than maxLines, each with its name, first line and length in lines. */
function longFunctions(fileName: string, text: string, maxLines: number): LongFunction[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line + 2 - line;
      if (lines > maxLines) found.push({ name: nameOf(node, source), line, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** A function's own name, else the name it is bound to (variable, property, class member), else "<anonymous>". */
function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (node.name !== undefined) return node.name.getText(source);
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.initializer === node) {
    return parent.name.getText(source);
  }
  return "<anonymous>";
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts"))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

describe("function length", () => {
  test("longFunctions finds declarations, expressions, arrows and methods over the limit, and names each", () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const text = [
      `export function declared() {\n${body(5)}\n}`,
      `const arrow = () => {\n${body(5)}\n};`,
      `const expression = function () {\n${body(5)}\n};`,
      `class Holder {\n  method() {\n${body(5)}\n  }\n  short() {\n${body(4)}\n  }\n}`,
      `const object = { property: () => {\n${body(5)}\n} };`,
      `export function fits() {\n${body(4)}\n}`,
    ].join("\n");
    expect(longFunctions("sample.ts", text, 4)).toEqual([
      { name: "declared", line: 1, lines: 5 },
      { name: "arrow", line: 6, lines: 5 },
      { name: "expression", line: 11, lines: 5 },
      { name: "method", line: 17, lines: 5 },
      { name: "property", line: 27, lines: 5 },
    ]);
  });

  test(`no function in src/ or workflows/ is longer than ${MAX_LINES} lines`, async () => {
    const offenders: string[] = [];
    for (const dir of SCANNED) {
      for (const file of await sourceFiles(join(ROOT, dir))) {
        for (const f of longFunctions(file, await readFile(file, "utf8"), MAX_LINES)) {
          offenders.push(`${relative(ROOT, file)}:${f.line} ${f.name} (${f.lines} lines)`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});
