// workflows/ is bundled into Temporal's deterministic sandbox: it may import activities and other src/ modules
// as types only. This is the lint rule that keeps it so.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, test } from "vitest";

const WORKFLOWS = new URL("../../workflows/", import.meta.url).pathname;

test("workflow files import only @temporalio/workflow, workflows/ siblings, and types", async () => {
  const offenders: string[] = [];
  for (const file of await readdir(WORKFLOWS)) {
    if (!file.endsWith(".ts")) continue;
    const source = await readFile(join(WORKFLOWS, file), "utf8");
    for (const m of source.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+"([^"]+)";/gms)) {
      const [, , isType, from] = m;
      const allowed = isType !== undefined || from === "@temporalio/workflow" || from!.startsWith("./");
      if (!allowed) offenders.push(`${file}: ${m[0].replace(/\s+/g, " ")}`);
    }
  }
  expect(offenders).toEqual([]);
});
