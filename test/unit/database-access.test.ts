// Domain code reaches the ORM through a TenantStore (tenant work) or a SystemStore (system work), never a bare
// EntityManager fork: the stores keep the EntityManager private, so the organization filter cannot be stepped
// around, and a reader sees at every call site which kind of work it is. Only src/db/ and the edges that open a
// unit of work (the call interceptor, the CLI, Temporal's activities and reconcilers) fork.
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { expect, test } from "vitest";

const ROOT = new URL("../../", import.meta.url).pathname;
const MAY_FORK = ["src/db/", "src/interceptors/unit-of-work.ts", "src/cli/", "src/temporal/", "src/roles/", "src/main.ts"];

test("no code outside src/db/ and the edges forks an EntityManager", async () => {
  const offenders: string[] = [];
  for (const dir of ["src", "workflows"]) {
    const entries = await readdir(join(ROOT, dir), { withFileTypes: true, recursive: true });
    for (const entry of entries.filter((e) => e.isFile() && e.name.endsWith(".ts"))) {
      const file = relative(ROOT, join(entry.parentPath, entry.name));
      if (MAY_FORK.some((allowed) => file === allowed || (allowed.endsWith("/") && file.startsWith(allowed)))) continue;
      const lines = (await readFile(join(ROOT, file), "utf8")).split("\n");
      lines.forEach((line, i) => {
        if (/\.fork\(\)/.test(line)) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
  }
  expect(offenders).toEqual([]);
});
